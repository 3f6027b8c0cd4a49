//! Bad input gives a clear error, never a panic: sizes over the limits, tables opened with the
//! wrong kind or key type, bad names, a directory already open, paths that cannot be written,
//! corrupt or foreign files, batches naming another database's table or too large for the log,
//! invalid options.

mod common;

use std::fs;
use std::time::Duration;

use common::TempDir;
use engine::{
    Db, Durability, Error, KeyType, MAX_BATCH_LEN, MAX_KEY_LEN, MAX_VALUE_LEN, Options, TableKind,
    WriteBatch,
};

fn options() -> Options {
    Options::new()
        .durability(Durability::Immediate)
        .checkpoint_interval(None)
}

#[test]
fn keys_and_values_over_the_limits_are_refused() {
    let db = Db::open_in_memory().unwrap();
    let table = db.ordered_table::<Vec<u8>>("t").unwrap();
    let long_key = vec![b'k'; MAX_KEY_LEN + 1];
    assert!(matches!(
        table.insert(&long_key, b"v"),
        Err(Error::KeyTooLarge { len, max }) if len == MAX_KEY_LEN + 1 && max == MAX_KEY_LEN
    ));
    assert!(matches!(
        table.remove(&long_key),
        Err(Error::KeyTooLarge { .. })
    ));
    let big_value = vec![0u8; MAX_VALUE_LEN + 1];
    assert!(matches!(
        table.insert(b"k", &big_value),
        Err(Error::ValueTooLarge { .. })
    ));
    assert!(matches!(
        table.compare_and_swap(&long_key, None::<&[u8]>, Some(b"v")),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(matches!(
        table.compare_and_swap(b"k", None::<&[u8]>, Some(&big_value)),
        Err(Error::ValueTooLarge { .. })
    ));
    let mut calls = 0;
    assert!(matches!(
        table.fetch_and_update(b"k", |_| {
            calls += 1;
            Some(&big_value)
        }),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(calls, 1, "a refused update is not retried");
    assert!(table.is_empty(), "nothing refused was written");
    let mut batch = WriteBatch::new();
    assert!(matches!(
        batch.insert(&table, &long_key, b"v"),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(matches!(
        batch.require(&table, &long_key, None::<&[u8]>),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(batch.is_empty(), "a refused write is not added");
    // The limits themselves are accepted.
    let max_key = vec![b'k'; MAX_KEY_LEN];
    table.insert(&max_key, b"v").unwrap();
    assert_eq!(table.get(&max_key), Some(b"v".to_vec()));
    assert!(!table.is_empty() && table.len() == 1);
}

#[test]
fn tables_of_another_kind_or_key_type_are_refused() {
    let dir = TempDir::new("mismatch");
    {
        let db = Db::open(dir.path(), options()).unwrap();
        db.ordered_table::<u64>("numbers").unwrap();
        let wrong_kind = db.hash_table::<u64>("numbers").unwrap_err();
        assert!(matches!(
            wrong_kind,
            Error::TableMismatch {
                kind: TableKind::Hash,
                found_kind: TableKind::Ordered,
                ..
            }
        ));
        let wrong_key = db.ordered_table::<Vec<u8>>("numbers").unwrap_err();
        assert!(matches!(
            wrong_key,
            Error::TableMismatch {
                key: KeyType::Bytes,
                found_key: KeyType::U64,
                ..
            }
        ));
        assert_eq!(
            wrong_key.to_string(),
            "table \"numbers\" is ordered with u64 keys, not ordered with byte-string keys"
        );
    }
    // The catalog remembers the table's kind across a reopen.
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(matches!(
        db.hash_table::<Vec<u8>>("numbers"),
        Err(Error::TableMismatch { .. })
    ));
    assert_eq!(
        db.tables(),
        vec![("numbers".to_string(), TableKind::Ordered, KeyType::U64)]
    );
}

#[test]
fn bad_table_names_are_refused() {
    let db = Db::open_in_memory().unwrap();
    assert!(matches!(
        db.ordered_table::<u64>(""),
        Err(Error::InvalidTableName { .. })
    ));
    let long = "n".repeat(engine::MAX_TABLE_NAME + 1);
    assert!(matches!(
        db.hash_table::<u64>(&long),
        Err(Error::InvalidTableName { .. })
    ));
    // The error keeps the whole name; its message quotes a bounded prefix of it, cut between
    // characters (after the "a", each "é" is two bytes: the 64th byte falls inside the 32nd).
    let huge = format!("a{}", "é".repeat(100_000));
    let error = db.ordered_table::<u64>(&huge).unwrap_err();
    assert!(matches!(&error, Error::InvalidTableName { name, .. } if *name == huge));
    let message = error.to_string();
    let shown = format!("\"a{}\"… ({} bytes)", "é".repeat(31), huge.len());
    assert!(message.contains(&shown), "{message}");
    assert!(message.len() < 200, "{message}");
    let short = db.ordered_table::<u64>("").unwrap_err().to_string();
    assert_eq!(short, "invalid table name \"\": empty");
    db.hash_table::<u64>(&"n".repeat(engine::MAX_TABLE_NAME))
        .unwrap();
}

#[test]
fn a_directory_is_opened_by_one_handle_at_a_time() {
    let dir = TempDir::new("lock");
    let db = Db::open(dir.path(), options()).unwrap();
    let second = Db::open(dir.path(), options()).unwrap_err();
    assert!(matches!(second, Error::AlreadyOpen { .. }), "{second}");
    drop(db);
    Db::open(dir.path(), options()).expect("the lock is released on drop");
}

#[test]
fn a_table_handle_keeps_the_database_open() {
    let dir = TempDir::new("handle");
    let db = Db::open(dir.path(), options()).unwrap();
    let table = db.ordered_table::<u64>("t").unwrap();
    drop(db);
    table.insert(&1, b"still open").unwrap();
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::AlreadyOpen { .. })
    ));
    drop(table);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(
        db.ordered_table::<u64>("t").unwrap().get(&1),
        Some(b"still open".to_vec())
    );
}

#[test]
fn paths_that_cannot_be_used_give_io_errors() {
    let dir = TempDir::new("paths");
    let file = dir.path().join("a-file");
    fs::write(&file, b"not a directory").unwrap();
    match Db::open(&file, options()) {
        Err(error @ Error::Io { .. }) => assert!(
            error
                .to_string()
                .ends_with("the path names a file, not a directory"),
            "{error}"
        ),
        other => panic!("expected an I/O error, got {other:?}"),
    }
    assert!(matches!(
        Db::open(file.join("below"), options()),
        Err(Error::Io { .. })
    ));
    // An empty path is refused before anything is created (in the current directory, which
    // `fs::create_dir_all("")` accepts and relative joins would land in).
    match Db::open("", options()) {
        Err(Error::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput)
        }
        other => panic!("expected an I/O error, got {other:?}"),
    }
    assert!(!std::path::Path::new("LOCK").exists());
}

#[test]
fn batches_over_one_log_record_are_refused_in_memory_as_on_disk() {
    let dir = TempDir::new("big-batch");
    let value = vec![7u8; MAX_VALUE_LEN];
    let in_memory = Db::open_in_memory_with(options()).unwrap();
    let on_disk = Db::open(dir.path(), options()).unwrap();
    for db in [&in_memory, &on_disk] {
        let table = db.ordered_table::<u64>("t").unwrap();
        let mut batch = WriteBatch::new();
        let count = MAX_BATCH_LEN / MAX_VALUE_LEN + 1;
        for key in 0..count as u64 {
            batch.insert(&table, &key, &value).unwrap();
        }
        match db.write(batch) {
            Err(Error::BatchTooLarge { len, max }) => {
                assert!(len > max && max == MAX_BATCH_LEN, "{len} {max}")
            }
            other => panic!("expected BatchTooLarge, got {other:?}"),
        }
        assert!(table.is_empty(), "nothing of the batch is written");
    }
}

#[test]
fn corrupt_and_foreign_catalogs_are_reported() {
    let dir = TempDir::new("catalog");
    {
        let db = Db::open(dir.path(), options()).unwrap();
        db.ordered_table::<u64>("a")
            .unwrap()
            .insert(&1, b"x")
            .unwrap();
        db.hash_table::<Vec<u8>>("b").unwrap();
    }
    let path = dir.path().join("catalog");
    let good = fs::read(&path).unwrap();
    for at in [0, 9, 13, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        fs::write(&path, &bad).unwrap();
        let error = Db::open(dir.path(), options()).unwrap_err();
        assert!(
            matches!(&error, Error::Corrupt { file, .. } if file.ends_with("catalog")),
            "byte {at}: {error}"
        );
    }
    fs::write(&path, b"#!/bin/sh\necho hello\n").unwrap();
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::Corrupt { .. })
    ));
    fs::write(&path, &good[..good.len() - 3]).unwrap();
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::Corrupt { .. })
    ));
    fs::write(&path, &good).unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(
        db.ordered_table::<u64>("a").unwrap().get(&1),
        Some(b"x".to_vec())
    );
}

#[test]
fn a_log_naming_a_table_the_catalog_lacks_is_corrupt() {
    let dir = TempDir::new("orphan");
    {
        let db = Db::open(dir.path(), options()).unwrap();
        db.ordered_table::<u64>("a")
            .unwrap()
            .insert(&1, b"x")
            .unwrap();
    }
    fs::remove_file(dir.path().join("catalog")).unwrap();
    let error = Db::open(dir.path(), options()).unwrap_err();
    assert!(matches!(error, Error::Corrupt { .. }), "{error}");
}

/// A log whose records are intact but that another program wrote (here: the log crate used
/// directly) can hold keys no table accepts; recovery refuses them with a clear error instead of
/// loading keys over the limit or of the wrong type.
#[test]
fn logged_keys_no_table_accepts_are_corrupt() {
    let forgeries: [(KeyType, Vec<u8>, &str); 2] = [
        (KeyType::Bytes, vec![7; MAX_KEY_LEN + 1], "over the limit"),
        (KeyType::U64, vec![7; 5], "not a u64 key"),
    ];
    for (key_type, key, reason) in forgeries {
        let dir = TempDir::new("forged");
        {
            let db = Db::open(dir.path(), options()).unwrap();
            match key_type {
                KeyType::Bytes => drop(db.ordered_table::<Vec<u8>>("t").unwrap()),
                KeyType::U64 => drop(db.ordered_table::<u64>("t").unwrap()),
            }
        }
        let wal_options = wal_checkpoint::Options {
            durability: Durability::Immediate,
            ..Default::default()
        };
        let (wal, _) = wal_checkpoint::Wal::open(dir.path(), wal_options).unwrap();
        wal.put(0, &key, b"value", || ()).unwrap();
        wal.close().unwrap();
        match Db::open(dir.path(), options()) {
            Err(Error::Corrupt {
                reason: message, ..
            }) => assert!(message.contains(reason), "{message}"),
            Err(other) => panic!("expected Corrupt, got {other}"),
            Ok(_) => panic!("a {}-byte {key_type} key was loaded", key.len()),
        }
    }
}

#[test]
fn corruption_inside_the_log_is_reported_or_tolerated_on_request() {
    let dir = TempDir::new("log");
    {
        let db = Db::open(dir.path(), options().log_lanes(1)).unwrap();
        let table = db.ordered_table::<u64>("t").unwrap();
        for k in 0..200u64 {
            table.insert(&k, k.to_le_bytes()).unwrap();
        }
    }
    let segment = fs::read_dir(dir.path().join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| fs::metadata(p).unwrap().len() > 1_000)
        .max_by_key(|p| fs::metadata(p).unwrap().len())
        .expect("a segment holds the writes");
    let mut bytes = fs::read(&segment).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&segment, &bytes).unwrap();
    let error = Db::open(dir.path(), options().log_lanes(1)).unwrap_err();
    assert!(
        matches!(&error, Error::Corrupt { file, .. } if *file == segment),
        "{error}"
    );
    let db = Db::open(dir.path(), options().log_lanes(1).tolerate_corruption(true)).unwrap();
    let table = db.ordered_table::<u64>("t").unwrap();
    let kept = table.len();
    assert!(kept > 0 && kept < 200, "a prefix survives: {kept}");
    let keys: Vec<u64> = table.iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        (0..kept as u64).collect::<Vec<_>>(),
        "the survivors are a prefix"
    );
    assert!(!db.stats().recovery.unwrap().tolerated.is_empty());
}

#[test]
fn batches_cannot_mix_databases() {
    let (a, b) = (Db::open_in_memory().unwrap(), Db::open_in_memory().unwrap());
    let (ta, tb) = (
        a.ordered_table::<u64>("t").unwrap(),
        b.ordered_table::<u64>("t").unwrap(),
    );
    let mut batch = WriteBatch::new();
    batch.insert(&ta, &1, b"a").unwrap();
    assert!(matches!(
        batch.insert(&tb, &1, b"b"),
        Err(Error::ForeignTable)
    ));
    assert!(matches!(
        batch.require(&tb, &1, None::<&[u8]>),
        Err(Error::ForeignTable)
    ));
    assert!(matches!(b.write(batch), Err(Error::ForeignTable)));
    assert_eq!(ta.get(&1), None);
    assert_eq!(tb.get(&1), None);
    // A batch of conditions alone is checked against its own database only.
    let mut conditions = WriteBatch::new();
    conditions.require(&ta, &1, None::<&[u8]>).unwrap();
    assert!(conditions.is_empty(), "no write");
    assert!(matches!(b.write(conditions), Err(Error::ForeignTable)));
}

#[test]
fn invalid_options_are_refused() {
    let dir = TempDir::new("options");
    for options in [
        options().durability(Durability::Periodic(Duration::ZERO)),
        options().checkpoint_interval(Some(Duration::ZERO)),
        options().log_lanes(0),
        options().segment_bytes(10),
    ] {
        assert!(matches!(
            Db::open(dir.path(), options.clone()),
            Err(Error::InvalidOptions(_))
        ));
        // In memory the log options have no effect but are checked all the same.
        assert!(matches!(
            Db::open_in_memory_with(options),
            Err(Error::InvalidOptions(_))
        ));
    }
    let config = engine::OrderedConfig {
        error_bound: 0,
        ..Default::default()
    };
    let error = Db::open_in_memory_with(options().ordered_index(config));
    assert!(matches!(error, Err(Error::OrderedIndex(_))));
    // Past 256 threads per index: refused, instead of exhausting the process's threads.
    let error = Db::open_in_memory_with(options().index_threads(257));
    assert!(
        matches!(&error, Err(Error::InvalidOptions(m)) if m.contains("index threads")),
        "{error:?}"
    );
    // A load factor that would size a resized group at more buckets than memory holds.
    let config = engine::HashConfig {
        lower_load_factor: 1e-300,
        target_load_factor: 1e-299,
        ..Default::default()
    };
    let error = Db::open_in_memory_with(options().hash_index(config));
    assert!(matches!(error, Err(Error::HashIndex(_))));
}

#[test]
fn foreign_files_in_place_of_log_files_never_panic() {
    let dir = TempDir::new("foreign");
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let table = db.ordered_table::<u64>("t").unwrap();
        table.insert(&1, b"one").unwrap();
        db.checkpoint().unwrap();
        table.insert(&2, b"two").unwrap();
    }
    let garbage = b"PK\x03\x04 this is a zip file, not a learnkv file".repeat(20);
    // A foreign file posing as the newest checkpoint: skipped for the older, valid one.
    fs::write(
        dir.path()
            .join(format!("checkpoint-{:020}.ckpt", u64::MAX / 2)),
        &garbage,
    )
    .unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let table = db.ordered_table::<u64>("t").unwrap();
    assert_eq!(table.get(&1), Some(b"one".to_vec()));
    assert_eq!(table.get(&2), Some(b"two".to_vec()));
    drop((table, db));
    // A foreign file posing as a log segment: a clear error naming it.
    let segment = dir
        .path()
        .join("wal")
        .join(format!("lane-000-{:016}.log", 0));
    fs::write(&segment, &garbage).unwrap();
    match Db::open(dir.path(), options()) {
        Err(Error::Corrupt { file, .. }) => assert_eq!(file, segment),
        Err(other) => panic!("expected Corrupt, got {other}"),
        Ok(db) => {
            let table = db.ordered_table::<u64>("t").unwrap();
            assert_eq!(table.get(&2), Some(b"two".to_vec()), "no silent loss");
        }
    }
}
