//! Bad input: foreign, corrupt, truncated and resized files, absurd options and requests, a
//! pool held by another handle or another process. Each is a clear error, never a panic.
#![cfg(not(loom))]

mod common;

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pm_alloc::{Corruption, Error, Mode, PAtomicPtr, PPtr, Pool, PoolOptions, SimOptions};
use test_support::TempDir;

fn options() -> PoolOptions {
    PoolOptions::new(1 << 20)
        .chunk_size(4096)
        .lanes(4)
        .layout(7)
}

fn make(dir: &TempDir, name: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    let pool = options().create(&path, Mode::Mapped).expect("create");
    pool.root::<[PAtomicPtr<u8>; 4]>().expect("root");
    path
}

fn poke(path: &Path, offset: u64, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for damage");
    file.seek(SeekFrom::Start(offset)).expect("seek");
    file.write_all(bytes).expect("write");
}

/// Opens the pool at `path` with `options`. A child process that a sibling test spawns holds a
/// copy of every descriptor of this process until it execs, so the lock of a pool this test has
/// just closed may stay held for that moment: `Locked` is retried for up to a second.
fn open_settled(options: &PoolOptions, path: &Path) -> Result<Pool, Error> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        match options.open(path, Mode::Mapped) {
            Err(Error::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            result => return result,
        }
    }
}

fn open_err(path: &Path) -> Error {
    open_settled(&options(), path).expect_err("the damaged pool is refused")
}

#[test]
fn wrong_magic_is_refused() {
    let dir = TempDir::new("magic");
    let path = make(&dir, "p");
    poke(&path, 0, b"NOTAPOOL");
    let e = open_err(&path);
    assert!(
        matches!(
            e,
            Error::Corrupt {
                reason: Corruption::BadMagic { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("not a learnkv pool"));
}

#[test]
fn a_foreign_file_is_refused() {
    let dir = TempDir::new("foreign");
    let path = dir.path().join("f");
    std::fs::write(&path, vec![0xab_u8; 8192]).expect("write");
    assert!(matches!(
        open_err(&path),
        Error::Corrupt {
            reason: Corruption::BadMagic { .. },
            ..
        }
    ));
}

#[test]
fn unknown_format_version_is_refused() {
    let dir = TempDir::new("version");
    let path = make(&dir, "p");
    poke(&path, 8, &99_u64.to_le_bytes());
    assert!(matches!(
        open_err(&path),
        Error::Corrupt {
            reason: Corruption::UnsupportedVersion { found: 99, .. },
            ..
        }
    ));
}

#[test]
fn damaged_header_fails_its_checksum() {
    let dir = TempDir::new("checksum");
    let path = make(&dir, "p");
    poke(&path, 40, &[9]);
    assert!(matches!(
        open_err(&path),
        Error::Corrupt {
            reason: Corruption::BadChecksum { .. },
            ..
        }
    ));
}

#[test]
fn truncated_files_are_refused() {
    let dir = TempDir::new("truncated");
    let path = make(&dir, "p");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(512 << 10).expect("truncate");
    drop(file);
    assert!(matches!(
        open_err(&path),
        Error::Corrupt {
            reason: Corruption::SizeMismatch {
                header: 1_048_576,
                file: 524_288
            },
            ..
        }
    ));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(100).expect("truncate");
    drop(file);
    assert!(matches!(
        open_err(&path),
        Error::Corrupt {
            reason: Corruption::Truncated { len: 100, .. },
            ..
        }
    ));
    std::fs::write(&path, b"").expect("empty");
    assert!(matches!(
        open_err(&path),
        Error::Corrupt {
            reason: Corruption::Truncated { len: 0, .. },
            ..
        }
    ));
}

#[test]
fn a_grown_file_is_a_size_mismatch() {
    let dir = TempDir::new("grown");
    let path = make(&dir, "p");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(2 << 20).expect("grow");
    drop(file);
    let e = open_err(&path);
    assert!(
        matches!(
            e,
            Error::Corrupt {
                reason: Corruption::SizeMismatch { .. },
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn inconsistent_chunk_table_is_refused() {
    let dir = TempDir::new("chunk");
    let path = make(&dir, "p");
    // Chunk table of this geometry: 4096 + 4 lanes * 3 lines * 64 B; chunk 1's record follows
    // chunk 0's (64 B). Set an allocated bit under a free header.
    poke(&path, 4096 + 4 * 192 + 64 + 8, &[0xff]);
    let e = open_err(&path);
    assert!(
        matches!(
            e,
            Error::Corrupt {
                reason: Corruption::BadChunk { chunk: 1, .. },
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_block_inside_a_large_block_is_refused() {
    let dir = TempDir::new("tail");
    let path = dir.path().join("p");
    let head = {
        let pool = options().create(&path, Mode::Mapped).expect("create");
        let root = pool.root::<[PAtomicPtr<u8>; 4]>().expect("root");
        let slots = pool.get(root).expect("root");
        let reservation = pool.reserve(8192, 64).expect("two chunks");
        let block = pool.publish(reservation, &slots[0]).expect("published");
        // The heap follows the chunk table (4096 + 4 lanes * 192 B, then 64 B per chunk).
        let heap = (4864 + pool.stats().chunks * 64).next_multiple_of(4096);
        (block.offset() - heap) / 4096
    };
    // The run's second chunk gets a small chunk's header (chunk 0's, which holds the root)
    // and its first block's bit: a block inside the large one.
    let small = std::fs::read(&path).expect("read")[4864..4872].to_vec();
    let tail = 4864 + (head + 1) * 64;
    poke(&path, tail, &small);
    poke(&path, tail + 8, &[1]);
    let e = open_err(&path);
    assert!(
        matches!(
            e,
            Error::Corrupt {
                reason: Corruption::BadChunk { chunk, .. },
                ..
            } if chunk == head
        ),
        "{e}"
    );
}

#[test]
fn layout_mismatch_is_refused() {
    let dir = TempDir::new("layout");
    let path = make(&dir, "p");
    let e = open_settled(&options().layout(8), &path).expect_err("another layout");
    assert!(
        matches!(
            e,
            Error::LayoutMismatch {
                expected: 8,
                found: 7,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_pool_open_twice_in_one_process_is_locked() {
    let dir = TempDir::new("lock");
    let path = make(&dir, "p");
    let pool = open_settled(&options(), &path).expect("first open");
    let e = options()
        .open(&path, Mode::Mapped)
        .expect_err("second open");
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert!(matches!(
        options().create(&path, Mode::Mapped),
        Err(Error::AlreadyExists { .. })
    ));
    drop(pool);
    open_settled(&options(), &path).expect("open after close");
}

/// The child side of `a_pool_open_in_another_process_is_locked`: holds the pool open until its
/// stdin closes. Does nothing unless started by that test.
#[test]
fn child_holds_pool_open() {
    let Ok(path) = std::env::var("PM_ALLOC_LOCK_CHILD") else {
        return;
    };
    let _pool = open_settled(&options(), Path::new(&path)).expect("child opens the pool");
    println!("\nPM-ALLOC-CHILD-READY");
    std::io::stdout().flush().expect("flush");
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
}

#[test]
fn a_pool_open_in_another_process_is_locked() {
    let dir = TempDir::new("lock-process");
    let path = make(&dir, "p");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_holds_pool_open",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PM_ALLOC_LOCK_CHILD", &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut lines = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    while !line.contains("PM-ALLOC-CHILD-READY") {
        line.clear();
        assert!(
            lines.read_line(&mut line).expect("read") > 0,
            "the child exited early"
        );
    }
    let e = options()
        .open(&path, Mode::Mapped)
        .expect_err("held by the child");
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    drop(child.stdin.take());
    assert!(child.wait().expect("the child exits").success());
    open_settled(&options(), &path).expect("open after the child exits");
}

#[test]
fn dax_mode_is_refused_off_dax_file_systems() {
    let dir = TempDir::new("dax");
    let path = dir.path().join("p");
    let e = options()
        .create(&path, Mode::Dax)
        .expect_err("the temporary directory is not DAX");
    assert!(
        matches!(e, Error::NotDax { .. } | Error::Unsupported(_)),
        "{e}"
    );
}

#[test]
fn absurd_options_are_refused() {
    for options in [
        PoolOptions::new(0),
        PoolOptions::new(1 << 60),
        PoolOptions::new((1 << 20) + 1),
        PoolOptions::new(1 << 20).chunk_size(3000),
        PoolOptions::new(1 << 20).chunk_size(1 << 30),
        PoolOptions::new(1 << 20).lanes(0),
        PoolOptions::new(1 << 20).lanes(100_000),
        PoolOptions::new(1 << 20).log_slots(1000),
        PoolOptions::new(8 << 10).chunk_size(4096),
    ] {
        let e = options.volatile().expect_err("refused");
        assert!(matches!(e, Error::InvalidOption { .. }), "{e}");
    }
    let dir = TempDir::new("mode");
    assert!(matches!(
        options().create(dir.path().join("p"), Mode::Volatile),
        Err(Error::InvalidOption { .. })
    ));
}

#[test]
fn bad_requests_and_pointers_are_refused() {
    let pool = options().volatile().expect("pool");
    let root = pool.root::<[PAtomicPtr<AtomicU64>; 4]>().expect("root");
    let slots = pool.get(root).expect("root");
    assert!(matches!(pool.reserve(0, 8), Err(Error::BadRequest { .. })));
    assert!(matches!(pool.reserve(64, 3), Err(Error::BadRequest { .. })));
    assert!(matches!(
        pool.reserve(64, 8192),
        Err(Error::BadRequest { .. })
    ));
    assert!(matches!(
        pool.reserve(1 << 40, 64),
        Err(Error::BadRequest { .. })
    ));
    assert!(matches!(
        pool.reserve(pool.stats().chunks as usize * 4096, 64),
        Err(Error::OutOfSpace { .. })
    ));
    // Frees of things that are not allocated blocks.
    for offset in [0, 8, 1 << 19, 1 << 40, root.offset() + 64] {
        assert!(matches!(
            pool.free(PPtr::<u8>::from_offset(offset)),
            Err(Error::NotAllocated { .. })
        ));
    }
    // A publish destination outside the pool or in its metadata.
    let outside = PAtomicPtr::<AtomicU64>::new(PPtr::null());
    let r = pool.reserve(64, 64).expect("space");
    assert!(matches!(
        pool.publish(r, &outside),
        Err(Error::InvalidPointer { .. })
    ));
    assert!(matches!(
        pool.free_at(&outside),
        Err(Error::InvalidPointer { .. })
    ));
    let p = pool.alloc::<AtomicU64>(&slots[0]).expect("alloc");
    pool.get(p).expect("resolves").store(5, Ordering::Relaxed);
    assert!(matches!(
        pool.get(PPtr::<AtomicU64>::from_offset(8)),
        Err(Error::InvalidPointer { .. })
    ));
    assert!(matches!(
        pool.get(p.byte_add(1)),
        Err(Error::InvalidPointer { .. })
    ));
    assert!(matches!(
        pool.persist(p, 1 << 30),
        Err(Error::InvalidPointer { .. })
    ));
    assert!(matches!(
        pool.persist_ref(&outside),
        Err(Error::InvalidPointer { .. })
    ));
    // A root asked for with a larger type than the one it was made with.
    assert!(matches!(
        pool.root::<[PAtomicPtr<AtomicU64>; 64]>(),
        Err(Error::RootSize { .. })
    ));
}

#[test]
fn garbage_images_are_refused() {
    let sim = SimOptions::default();
    assert!(matches!(
        options().open_image(&[], sim.clone()),
        Err(Error::Corrupt { .. })
    ));
    assert!(matches!(
        options().open_image(&vec![7; 1 << 20], sim.clone()),
        Err(Error::Corrupt { .. })
    ));
    let pool = options().simulated(sim.clone()).expect("pool");
    let mut image = pool.persisted_image().expect("simulated");
    image.truncate(1 << 19);
    assert!(matches!(
        options().open_image(&image, sim),
        Err(Error::Corrupt {
            reason: Corruption::SizeMismatch { .. },
            ..
        })
    ));
}
