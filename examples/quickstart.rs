//! learnkv in one page: open a database, write, read, scan a range, reopen, verify.
//!
//! `cargo run --example quickstart [DIR]` (DIR defaults to a fresh temporary directory).

use std::path::PathBuf;

use learnkv::{Db, Durability, Options, WriteBatch};

fn main() -> Result<(), learnkv::Error> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("learnkv-quickstart-{}", std::process::id()))
        });
    println!("database: {}", dir.display());
    let options = Options::new().durability(Durability::Immediate);

    {
        let db = Db::open(&dir, options.clone())?;
        // An ordered table with byte-string keys (XIndex-R) and a hash table (XIndex-H).
        let cities = db.ordered_table::<Vec<u8>>("cities")?;
        let visits = db.hash_table::<u64>("visits")?;

        for (name, population) in [
            ("lisbon", 545_000u64),
            ("oslo", 709_000),
            ("lyon", 522_000),
            ("kyoto", 1_464_000),
            ("quito", 2_800_000),
        ] {
            cities.insert(name.as_bytes(), population.to_le_bytes())?;
        }
        // Writes to several tables, atomic with respect to crashes.
        let mut batch = WriteBatch::new();
        batch.insert(&visits, &1, b"lisbon")?;
        batch.insert(&visits, &2, b"kyoto")?;
        batch.remove(&cities, b"quito")?;
        db.write(batch)?;

        let oslo = cities.get(b"oslo").expect("just inserted");
        println!("oslo: {}", u64::from_le_bytes(oslo.try_into().unwrap()));
        print!("cities from \"l\" to \"p\":");
        for (name, _) in cities.range(&b"l"[..]..&b"p"[..]) {
            print!(" {}", String::from_utf8_lossy(&name));
        }
        println!();
        println!("{} cities, {} visits", cities.len(), visits.len());
    } // Dropping the last handle syncs the log and stops the background threads.

    let db = Db::open(&dir, options)?;
    let cities = db.ordered_table::<Vec<u8>>("cities")?;
    let visits = db.hash_table::<u64>("visits")?;
    let names: Vec<String> = cities
        .iter()
        .map(|(name, _)| String::from_utf8_lossy(&name).into_owned())
        .collect();
    assert_eq!(names, ["kyoto", "lisbon", "lyon", "oslo"]);
    // Ranges run from either end: the two largest names, from the end down.
    let last_two: Vec<Vec<u8>> = cities
        .range::<[u8], _>(..)
        .rev()
        .take(2)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(last_two, [b"oslo".to_vec(), b"lyon".to_vec()]);
    assert_eq!(
        cities.first().map(|(name, _)| name),
        Some(b"kyoto".to_vec())
    );
    assert_eq!(visits.get(&2), Some(b"kyoto".to_vec()));
    let stats = db.stats();
    println!(
        "reopened: {} keys in {} tables, {} recovered log records; verified",
        stats.keys,
        stats.tables.len(),
        stats.recovery.map_or(0, |r| r.records_replayed)
    );
    drop((cities, visits, db));
    if std::env::args_os().nth(1).is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
