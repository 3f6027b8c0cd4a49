//! Deleting tables: the table leaves the catalog durably, its handles refuse writes, batches
//! naming it apply nothing, a new table of the same name starts empty, and reopening (from the
//! log alone, or from a checkpoint taken before the deletion plus the log) brings back every
//! other table and none of the deleted one's pairs; deletions and recreations racing writers.

mod common;

use common::TempDir;
use engine::{Db, Durability, Error, KeyType, Options, TableKind, WriteBatch};

fn options() -> Options {
    Options::new()
        .durability(Durability::Immediate)
        .checkpoint_interval(None)
}

/// Writes 100 pairs to `t` ("gone" later) and `kept`, deletes `t` (after a checkpoint when
/// `checkpoint_first`), recreates it as a hash table with other pairs, and checks the result
/// before and after a reopen.
fn delete_and_reopen(checkpoint_first: bool) {
    let dir = TempDir::new("engine-delete");
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let gone = db.ordered_table::<u64>("t").unwrap();
        let kept = db.ordered_table::<Vec<u8>>("kept").unwrap();
        for i in 0..100u64 {
            gone.insert(&i, common::value(i, 40)).unwrap();
            kept.insert(&i.to_be_bytes(), common::value(i, 20)).unwrap();
        }
        if checkpoint_first {
            db.checkpoint().unwrap();
        }
        assert!(db.delete_table("t").unwrap());
        assert!(!db.delete_table("t").unwrap(), "already deleted");
        assert!(matches!(
            gone.insert(&1, b"late"),
            Err(Error::TableDeleted { name }) if name == "t"
        ));
        assert!(matches!(gone.remove(&1), Err(Error::TableDeleted { .. })));
        assert!(matches!(
            gone.compare_and_swap(&1, Some(common::value(1, 40)), None::<&[u8]>),
            Err(Error::TableDeleted { .. })
        ));
        assert!(matches!(
            gone.fetch_and_update(&1, |_| Some(b"late")),
            Err(Error::TableDeleted { .. })
        ));
        assert_eq!(
            gone.get(&1),
            Some(common::value(1, 40)),
            "an old handle still reads what the table held"
        );
        let mut batch = WriteBatch::new();
        batch.insert(&kept, b"batched", b"v").unwrap();
        batch.insert(&gone, &7, b"v").unwrap();
        assert!(matches!(db.write(batch), Err(Error::TableDeleted { .. })));
        let mut conditioned = WriteBatch::new();
        conditioned.insert(&kept, b"batched", b"v").unwrap();
        conditioned.require(&gone, &7, None::<&[u8]>).unwrap();
        assert!(matches!(
            db.write(conditioned),
            Err(Error::TableDeleted { .. })
        ));
        assert_eq!(
            kept.get(b"batched"),
            None,
            "a refused batch applies nothing"
        );
        let again = db.hash_table::<u64>("t").unwrap();
        assert!(
            again.is_empty(),
            "a new table of the same name starts empty"
        );
        again.insert(&1000, b"new").unwrap();
        assert_eq!(
            db.tables(),
            [
                ("kept".to_owned(), TableKind::Ordered, KeyType::Bytes),
                ("t".to_owned(), TableKind::Hash, KeyType::U64),
            ]
        );
        assert_eq!(db.stats().keys, 101, "stats count the live tables only");
    }
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.tables().len(), 2);
    let again = db.hash_table::<u64>("t").unwrap();
    assert_eq!(
        again.len(),
        1,
        "none of the deleted table's pairs came back"
    );
    assert_eq!(again.get(&1000), Some(b"new".to_vec()));
    let kept = db.ordered_table::<Vec<u8>>("kept").unwrap();
    assert_eq!(kept.len(), 100);
    assert!(
        (0..100u64).all(|i| kept.get(&i.to_be_bytes()) == Some(common::value(i, 20))),
        "the other table is whole"
    );
    assert!(matches!(
        db.ordered_table::<u64>("t"),
        Err(Error::TableMismatch { .. })
    ));
    // A checkpoint after the reopen holds the live tables' pairs only.
    db.checkpoint().unwrap();
    drop((again, kept, db));
    let db = Db::open(dir.path(), options()).unwrap();
    let stats = db.stats();
    assert_eq!(stats.keys, 101);
    assert_eq!(
        stats
            .recovery
            .expect("opened from a directory")
            .checkpoint_entries,
        101,
        "the checkpoint holds no pair of the deleted table"
    );
}

/// The catalog stays in format version 1, which older builds read, until a table is deleted.
#[test]
fn the_catalog_format_changes_only_with_a_deletion() {
    let dir = TempDir::new("engine-delete-format");
    let version = || {
        let bytes = std::fs::read(dir.path().join("catalog")).unwrap();
        u32::from_le_bytes(bytes[8..12].try_into().unwrap())
    };
    let db = Db::open(dir.path(), options()).unwrap();
    db.ordered_table::<u64>("a").unwrap();
    db.hash_table::<u64>("b").unwrap();
    assert_eq!(version(), 1);
    assert!(db.delete_table("a").unwrap());
    assert_eq!(version(), 2);
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(
        db.tables(),
        [("b".to_owned(), TableKind::Hash, KeyType::U64)]
    );
}

#[test]
fn a_deleted_table_stays_deleted_across_reopens_from_the_log() {
    delete_and_reopen(false);
}

#[test]
fn a_deleted_table_stays_deleted_across_reopens_from_a_checkpoint() {
    delete_and_reopen(true);
}

#[test]
fn deleting_in_memory_and_bad_names() {
    let db = Db::open_in_memory().unwrap();
    let table = db.hash_table::<Vec<u8>>("h").unwrap();
    table.insert(b"k", b"v").unwrap();
    assert!(db.delete_table("h").unwrap());
    assert!(db.tables().is_empty());
    assert!(matches!(
        table.insert(b"k", b"w"),
        Err(Error::TableDeleted { .. })
    ));
    assert!(matches!(
        db.delete_table(""),
        Err(Error::InvalidTableName { .. })
    ));
    assert!(!db.delete_table("never created").unwrap());
}

/// Writers insert through whatever table `t` currently is while another thread deletes and
/// recreates it: a write succeeds or fails with `TableDeleted`, never otherwise; the last
/// incarnation holds only acknowledged writes; and a reopen finds exactly what it held.
#[test]
fn deletions_race_writers_and_recreations() {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};

    const WRITERS: u64 = 2;
    let dir = TempDir::new("engine-delete-race");
    let db = Db::open(dir.path(), options().durability(Durability::None)).unwrap();
    let stop = AtomicBool::new(false);
    let acknowledged: Vec<BTreeSet<u64>> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (db, stop) = (&db, &stop);
                scope.spawn(move || {
                    let mut acked = BTreeSet::new();
                    for i in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let key = w << 32 | i;
                        let table = db.ordered_table::<u64>("t").unwrap();
                        match table.insert(&key, key.to_le_bytes()) {
                            Ok(_) => {
                                acked.insert(key);
                            }
                            Err(Error::TableDeleted { .. }) => {}
                            Err(e) => panic!("write {key}: {e}"),
                        }
                    }
                    acked
                })
            })
            .collect();
        for _ in 0..100 {
            db.delete_table("t").unwrap();
            db.ordered_table::<u64>("t").unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(
        acknowledged.iter().all(|acked| !acked.is_empty()),
        "every writer wrote"
    );
    let last: Vec<(u64, Vec<u8>)> = db.ordered_table::<u64>("t").unwrap().iter().collect();
    for (key, value) in &last {
        assert!(
            acknowledged[(key >> 32) as usize].contains(key),
            "key {key} was never acknowledged"
        );
        assert_eq!(*value, key.to_le_bytes());
    }
    db.flush().unwrap();
    drop(db);
    let db = Db::open(dir.path(), options()).unwrap();
    let reopened: Vec<(u64, Vec<u8>)> = db.ordered_table::<u64>("t").unwrap().iter().collect();
    assert_eq!(reopened, last, "the reopen finds the last incarnation");
    assert_eq!(db.tables().len(), 1);
}

/// Deleted tables between and after live ones: tables a, b, c, d written, b and d deleted,
/// then reopened from the log alone and again after a checkpoint; a and c come back whole, b
/// and d not at all, and a new table takes a fresh id.
#[test]
fn deletions_between_and_after_live_tables() {
    let dir = TempDir::new("engine-delete-gaps");
    let names = ["a", "b", "c", "d"];
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for (n, name) in names.iter().enumerate() {
            let table = db.ordered_table::<u64>(name).unwrap();
            for k in 0..20u64 {
                table.insert(&k, common::value(k + n as u64, 30)).unwrap();
            }
        }
        assert!(db.delete_table("b").unwrap());
        assert!(db.delete_table("d").unwrap());
    }
    for checkpoint in [false, true] {
        let db = Db::open(dir.path(), options()).unwrap();
        let live: Vec<String> = db.tables().into_iter().map(|(name, ..)| name).collect();
        assert_eq!(live, ["a", "c"], "checkpoint taken before: {checkpoint}");
        for (n, name) in [(0u64, "a"), (2, "c")] {
            let table = db.ordered_table::<u64>(name).unwrap();
            assert_eq!(table.len(), 20);
            assert!((0..20u64).all(|k| table.get(&k) == Some(common::value(k + n, 30))));
        }
        if !checkpoint {
            db.checkpoint().unwrap();
        }
    }
    let db = Db::open(dir.path(), options()).unwrap();
    let again = db.ordered_table::<u64>("d").unwrap();
    assert!(again.is_empty(), "a recreated table starts empty");
}

/// A log or checkpoint naming a table the catalog never had (here: an older catalog put back
/// over a newer log) is a corrupt directory, reported as such.
#[test]
fn a_table_the_catalog_never_had_is_corruption() {
    let dir = TempDir::new("engine-delete-foreign");
    let catalog = dir.path().join("catalog");
    {
        let db = Db::open(dir.path(), options()).unwrap();
        db.ordered_table::<u64>("a")
            .unwrap()
            .insert(&1, b"x")
            .unwrap();
        let older = std::fs::read(&catalog).unwrap();
        db.ordered_table::<u64>("b")
            .unwrap()
            .insert(&1, b"y")
            .unwrap();
        drop(db);
        std::fs::write(&catalog, older).unwrap();
    }
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::Corrupt { reason, .. }) if reason.contains("never had")
    ));
}
