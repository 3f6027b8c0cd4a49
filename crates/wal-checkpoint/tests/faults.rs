//! Injected I/O failures: a failing write, a failing fsync, a full disk. The error reaches the
//! writer, later calls fail, and a reopen recovers a prefix holding every acknowledged write; a
//! batch whose record cannot be written applies none of its ops.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Model, TempDir, options, segments, state};
use wal_checkpoint::{BatchOp, Durability, Error, FaultPlan, Options, Wal};

fn model(k: u64) -> Model {
    (0..k)
        .map(|i| ((0, i.to_be_bytes().to_vec()), i.to_le_bytes().to_vec()))
        .collect()
}

/// Writes keys 0.. until a write fails (arming the fault with `arm` after `before` writes);
/// returns (acknowledged, attempted).
fn write_until_failure(
    wal: &Wal,
    plan: &FaultPlan,
    before: u64,
    arm: impl Fn(&FaultPlan),
) -> (u64, u64) {
    let mut acked = 0;
    for i in 0..10_000u64 {
        if i == before {
            arm(plan);
        }
        match wal.put(0, &i.to_be_bytes(), &i.to_le_bytes(), || ()) {
            Ok(()) => acked = i + 1,
            Err(Error::Io { .. } | Error::Failed(_)) => {
                // Every later call fails too.
                assert!(matches!(
                    wal.put(0, b"later", b"x", || ()),
                    Err(Error::Failed(_))
                ));
                assert!(matches!(wal.sync(), Err(Error::Failed(_))));
                return (acked, i + 1);
            }
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    panic!("the injected fault never fired");
}

fn check(durability: Durability, buffer_bytes: usize, arm: impl Fn(&FaultPlan) + Copy) {
    for before in [0, 3, 40] {
        let dir = TempDir::new("faults");
        let plan = Arc::new(FaultPlan::new());
        let opts = Options {
            faults: Some(Arc::clone(&plan)),
            buffer_bytes,
            ..options(2, durability)
        };
        let (wal, _) = Wal::open(dir.path(), opts).expect("open");
        let (acked, attempted) = write_until_failure(&wal, &plan, before, arm);
        drop(wal);
        let (_, recovery) = Wal::open(dir.path(), options(2, Durability::None)).expect("reopen");
        let got = state(&recovery);
        let k = got.len() as u64;
        // Without Immediate, an acknowledgement promises nothing about durability.
        let durable = if durability == Durability::Immediate {
            acked
        } else {
            0
        };
        assert!(
            k >= durable && k <= attempted,
            "recovered {k} writes; {acked} acknowledged, {attempted} attempted"
        );
        assert_eq!(got, model(k), "a prefix of the writes");
    }
}

#[test]
fn a_failing_fsync_reaches_immediate_writers() {
    check(Durability::Immediate, 1 << 20, |plan| {
        plan.fail_sync_after(1)
    });
}

#[test]
fn a_failing_write_reaches_immediate_writers() {
    check(Durability::Immediate, 1 << 20, |plan| {
        plan.fail_write_after(1)
    });
}

#[test]
fn a_full_disk_reaches_immediate_writers() {
    check(Durability::Immediate, 1 << 20, |plan| plan.enospc_after(1));
}

#[test]
fn a_full_disk_reaches_a_writer_flushing_its_own_buffer() {
    // Tiny buffers: every write hands its buffer to the file itself (no committer involved).
    check(Durability::None, 1, |plan| plan.enospc_after(2));
}

#[test]
fn a_failing_committer_fails_later_periodic_writes() {
    let dir = TempDir::new("periodic-fault");
    let plan = Arc::new(FaultPlan::new());
    let opts = Options {
        faults: Some(Arc::clone(&plan)),
        ..options(1, Durability::Periodic(Duration::from_millis(2)))
    };
    let (wal, _) = Wal::open(dir.path(), opts).expect("open");
    wal.put(0, &0u64.to_be_bytes(), &0u64.to_le_bytes(), || ())
        .expect("put");
    wal.sync().expect("sync");
    plan.fail_sync_after(1);
    let mut failed = false;
    for i in 1..100_000u64 {
        if wal
            .put(0, &i.to_be_bytes(), &i.to_le_bytes(), || ())
            .is_err()
        {
            failed = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(failed, "the committer's failure reaches the writers");
    drop(wal);
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("reopen");
    let got = state(&recovery);
    assert!(!got.is_empty());
    assert_eq!(got, model(got.len() as u64));
}

#[test]
fn a_failed_checkpoint_leaves_the_log_working() {
    let dir = TempDir::new("ckpt-fault");
    let plan = Arc::new(FaultPlan::new());
    let opts = Options {
        faults: Some(Arc::clone(&plan)),
        ..options(1, Durability::Immediate)
    };
    let (wal, _) = Wal::open(dir.path(), opts).expect("open");
    for i in 0..10u64 {
        wal.put(0, &i.to_be_bytes(), &i.to_le_bytes(), || ())
            .expect("put");
    }
    plan.fail_write_after(1);
    let result = wal.checkpoint(|w| {
        for i in 0..10u64 {
            w.put(0, &i.to_be_bytes(), &i.to_le_bytes())?;
        }
        Ok(())
    });
    assert!(matches!(result, Err(Error::Io { .. })));
    let source_failed = wal.checkpoint(|_| Err(Error::Source("scan failed".into())));
    assert!(matches!(source_failed, Err(Error::Source(_))));
    wal.put(0, &10u64.to_be_bytes(), &10u64.to_le_bytes(), || ())
        .expect("the log still works");
    drop(wal);
    let (_, recovery) = Wal::open(dir.path(), options(1, Durability::None)).expect("reopen");
    assert_eq!(state(&recovery), model(11));
    assert!(!dir.path().join("checkpoint.tmp").exists());
}

#[test]
fn a_batch_whose_append_fails_applies_nothing() {
    let dir = TempDir::new("batch-fault");
    let plan = Arc::new(FaultPlan::new());
    // Tiny buffers: the batch's own append writes its record out, and that write fails.
    let opts = Options {
        faults: Some(Arc::clone(&plan)),
        buffer_bytes: 1,
        ..options(1, Durability::Immediate)
    };
    let (wal, _) = Wal::open(dir.path(), opts).expect("open");
    let keys: Vec<[u8; 8]> = (0..3u64).map(u64::to_be_bytes).collect();
    let ops: Vec<BatchOp<'_>> = keys
        .iter()
        .map(|key| BatchOp::Put {
            table: 0,
            key,
            value: b"v",
        })
        .collect();
    let mut applied = 0;
    wal.batch(&ops, |_| applied += 1).expect("a batch");
    assert_eq!(applied, 3);
    plan.fail_write_after(1);
    let failed = wal.batch(&ops, |_| applied += 1);
    assert!(matches!(failed, Err(Error::Io { .. })), "{failed:?}");
    assert_eq!(applied, 3, "a batch that was not logged applied ops");
}

#[test]
fn a_failed_open_removes_the_segments_it_created() {
    let dir = TempDir::new("failed-open");
    let (wal, _) = Wal::open(dir.path(), options(2, Durability::None)).expect("open");
    for i in 0..10u64 {
        wal.put(0, &i.to_be_bytes(), &i.to_le_bytes(), || ())
            .expect("put");
    }
    wal.close().expect("close");
    let before = segments(dir.path());
    // Eight lanes asked for: the fourth lane's new segment cannot be written.
    let plan = Arc::new(FaultPlan::new());
    plan.fail_write_after(4);
    let opts = Options {
        faults: Some(Arc::clone(&plan)),
        ..options(8, Durability::None)
    };
    assert!(matches!(Wal::open(dir.path(), opts), Err(Error::Io { .. })));
    assert_eq!(
        plan.counts().0,
        4,
        "three segments created, the fourth failed"
    );
    assert_eq!(segments(dir.path()), before);
    let (_wal, recovery) = Wal::open(dir.path(), options(2, Durability::None)).expect("reopen");
    assert_eq!(state(&recovery), model(10));
    // The reopen starts a segment in each of its two lanes and no other.
    assert_eq!(segments(dir.path()).len(), before.len() + 2);
}

#[test]
fn an_open_out_of_file_descriptors_removes_the_segments_it_created() {
    const CHILD: &str = "LEARNKV_FD_LIMIT_CHILD";
    if let Ok(dir) = std::env::var(CHILD) {
        // The child: 64 descriptors, and an open that asks for 256 lanes, each holding its
        // segment open, runs out of them part way (creating a segment, or syncing the
        // directory after it).
        let limit = libc::rlimit {
            rlim_cur: 64,
            rlim_max: 64,
        };
        // SAFETY: `limit` is a valid `rlimit` for the call's duration; lowering this process's
        // descriptor limit affects only this child.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        match Wal::open(&dir, options(256, Durability::None)) {
            Err(Error::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::EMFILE)),
            other => panic!("expected running out of descriptors, got {other:?}"),
        }
        return;
    }
    let dir = TempDir::new("fd-limit");
    let (wal, _) = Wal::open(dir.path(), options(2, Durability::None)).expect("open");
    wal.put(0, b"k", b"v", || ()).expect("put");
    wal.close().expect("close");
    let before = segments(dir.path());
    let child = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "an_open_out_of_file_descriptors_removes_the_segments_it_created",
            "--nocapture",
        ])
        .env(CHILD, dir.path())
        .output()
        .expect("the child runs");
    assert!(child.status.success(), "{child:?}");
    assert_eq!(segments(dir.path()), before);
}
