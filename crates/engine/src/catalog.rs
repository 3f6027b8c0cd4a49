//! The catalog: the database's tables with their ids, kinds and key types, in the file
//! `catalog` (DESIGN.md, "Files").
//!
//! Layout, little-endian: the magic `LKVCATLG`, a `u32` format version, a `u32` entry count; in
//! version 2 then the `u32` id the next table will take; per entry a `u32` id, a `u8` kind, a `u8`
//! key type, a `u16` name length and the UTF-8 name; then the CRC32C of every byte before it. Ids
//! are never reused: a deleted table leaves the catalog, and its id, below the next one, tells
//! recovery to skip the log records and checkpoint entries that still name it (an id at or above
//! the next one is a foreign or corrupt file, and so are ids out of order and names that are empty,
//! too long or taken twice). Version 1, from before deletion existed, has no next id and
//! consecutive ids from 0; it is still read, and still written while no table was ever deleted, so
//! older builds open such databases. The file is replaced whole: written to `catalog.tmp`, fsynced,
//! renamed over `catalog`, and the directory fsynced, before a new table takes its first write (and
//! before a deletion returns), so the log never names a table the catalog does not account for.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::key::{KeyType, TableKind};

const MAGIC: &[u8; 8] = b"LKVCATLG";
const VERSION: u32 = 2;
/// The catalog's file name.
pub(crate) const FILE: &str = "catalog";
/// The longest table name, in bytes.
pub const MAX_TABLE_NAME: usize = 255;

/// One table of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) kind: TableKind,
    pub(crate) key: KeyType,
}

/// The live tables, in id order, and the id the next table takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Catalog {
    entries: Vec<Entry>,
    next_id: u32,
}

impl Catalog {
    /// Reads `dir`'s catalog; empty when the file does not exist.
    pub(crate) fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(FILE);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(Error::io(path, e)),
        };
        Self::decode(&bytes).map_err(|(offset, reason)| Error::corrupt(path, offset, reason))
    }

    fn decode(bytes: &[u8]) -> Result<Self, (u64, &'static str)> {
        let body_len = bytes
            .len()
            .checked_sub(4)
            .ok_or((0, "shorter than a catalog"))?;
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return Err((0, "not a learnkv catalog (bad magic)"));
        }
        let (body, crc) = bytes.split_at(body_len);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err((body_len as u64, "checksum mismatch"));
        }
        let mut reader = Reader { bytes: body, at: 8 };
        let version = reader.u32()?;
        if !(1..=VERSION).contains(&version) {
            return Err((8, "unsupported catalog version"));
        }
        let count = reader.u32()?;
        let next_id = if version == 1 { count } else { reader.u32()? };
        let mut entries: Vec<Entry> = Vec::new();
        let mut names = HashSet::new();
        for position in 0..count {
            let at = reader.at as u64;
            let id = reader.u32()?;
            if version == 1 && id != position {
                return Err((at, "table ids of a version 1 catalog are not 0, 1, 2, ..."));
            }
            if entries.last().is_some_and(|last: &Entry| id <= last.id) {
                return Err((at, "table ids do not increase"));
            }
            if id >= next_id {
                return Err((at, "a table id is not below the next id"));
            }
            let kind = match reader.u8()? {
                0 => TableKind::Ordered,
                1 => TableKind::Hash,
                _ => return Err((at, "unknown table kind")),
            };
            let key = match reader.u8()? {
                0 => KeyType::U64,
                1 => KeyType::Bytes,
                _ => return Err((at, "unknown key type")),
            };
            let len = reader.u16()? as usize;
            let name = std::str::from_utf8(reader.take(len)?)
                .map_err(|_| (at, "a table name is not UTF-8"))?
                .to_owned();
            if check_name(&name).is_err() {
                return Err((at, "a table name is empty or too long"));
            }
            if !names.insert(name.clone()) {
                return Err((at, "two tables have one name"));
            }
            entries.push(Entry {
                id,
                name,
                kind,
                key,
            });
        }
        if reader.at != body.len() {
            return Err((reader.at as u64, "trailing bytes"));
        }
        Ok(Self { entries, next_id })
    }

    /// The file's bytes: version 1 while no table was ever deleted (ids `0..count`), so that
    /// older builds can still open the database.
    fn encode(&self) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        let never_deleted = self.next_id as usize == self.entries.len();
        let version = if never_deleted { 1 } else { VERSION };
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        if !never_deleted {
            bytes.extend_from_slice(&self.next_id.to_le_bytes());
        }
        for entry in &self.entries {
            bytes.extend_from_slice(&entry.id.to_le_bytes());
            bytes.push(match entry.kind {
                TableKind::Ordered => 0,
                TableKind::Hash => 1,
            });
            bytes.push(match entry.key {
                KeyType::U64 => 0,
                KeyType::Bytes => 1,
            });
            bytes.extend_from_slice(&(entry.name.len() as u16).to_le_bytes());
            bytes.extend_from_slice(entry.name.as_bytes());
        }
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// Replaces `dir`'s catalog file with this catalog, durably.
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        let tmp = dir.join("catalog.tmp");
        let path = dir.join(FILE);
        let mut file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        file.write_all(&self.encode())
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(dir, e))
    }

    /// The entry of the table called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Adds a table of `kind` and `key` type called `name` (checked by the caller) under the
    /// next id; the id, or an error once every `u32` id was taken.
    pub(crate) fn add(&mut self, name: &str, kind: TableKind, key: KeyType) -> Result<u32> {
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or_else(|| Error::InvalidTableName {
            name: name.to_owned(),
            reason: "every table id was taken",
        })?;
        self.entries.push(Entry {
            id,
            name: name.to_owned(),
            kind,
            key,
        });
        Ok(id)
    }

    /// Removes table `id`; its id stays taken.
    pub(crate) fn delete(&mut self, id: u32) {
        self.entries.retain(|e| e.id != id);
    }

    /// The live tables, in id order.
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The id the next table takes: every id below it was taken, by a live or deleted table.
    pub(crate) fn next_id(&self) -> u32 {
        self.next_id
    }
}

/// Checks a table name: 1 to [`MAX_TABLE_NAME`] bytes.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "empty"
    } else if name.len() > MAX_TABLE_NAME {
        "longer than 255 bytes"
    } else {
        return Ok(());
    };
    Err(Error::InvalidTableName {
        name: name.to_owned(),
        reason,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], (u64, &'static str)> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let end = end.ok_or((self.at as u64, "truncated"))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8, (u64, &'static str)> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, (u64, &'static str)> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn u32(&mut self) -> Result<u32, (u64, &'static str)> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Catalog {
        let mut catalog = Catalog::default();
        catalog
            .add("users", TableKind::Ordered, KeyType::Bytes)
            .unwrap();
        catalog
            .add("sessions", TableKind::Hash, KeyType::U64)
            .unwrap();
        catalog
    }

    /// `catalog` with table 0 deleted and a table added after it.
    fn with_deletion() -> Catalog {
        let mut catalog = sample();
        catalog.delete(0);
        catalog.add("users", TableKind::Hash, KeyType::U64).unwrap();
        catalog
    }

    #[test]
    fn catalogs_round_trip() {
        for catalog in [sample(), with_deletion()] {
            assert_eq!(Catalog::decode(&catalog.encode()), Ok(catalog.clone()));
        }
        let catalog = sample();
        assert_eq!(catalog.find("sessions").map(|e| e.id), Some(1));
        assert!(catalog.find("nope").is_none());
    }

    #[test]
    fn deleted_tables_leave_and_their_ids_are_not_reused() {
        let catalog = with_deletion();
        assert_eq!(catalog.find("users").map(|e| e.id), Some(2), "a new id");
        assert_eq!(catalog.entries().len(), 2);
        assert_eq!(catalog.next_id(), 3);
        let decoded = Catalog::decode(&catalog.encode()).expect("a valid catalog");
        assert_eq!(decoded.next_id(), 3, "the next id survives the file");
    }

    #[test]
    fn the_format_stays_at_version_1_until_a_deletion() {
        let version = |catalog: &Catalog| catalog.encode()[8..12].to_vec();
        assert_eq!(version(&sample()), 1u32.to_le_bytes());
        assert_eq!(version(&with_deletion()), 2u32.to_le_bytes());
        let mut deleted_last = sample();
        deleted_last.delete(1);
        assert_eq!(
            version(&deleted_last),
            2u32.to_le_bytes(),
            "a deleted last table still takes its id"
        );
        assert_eq!(
            Catalog::decode(&deleted_last.encode()).map(|c| c.next_id()),
            Ok(2)
        );
    }

    /// `body` (a catalog without its checksum) with a valid checksum.
    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let crc = crc32c::crc32c(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    }

    /// A catalog body of `version` with `entries` (id, name) of ordered `u64` tables, and the
    /// next id in version 2.
    fn body(version: u32, next_id: u32, entries: &[(u32, &str)]) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        if version == 2 {
            bytes.extend_from_slice(&next_id.to_le_bytes());
        }
        for (id, name) in entries {
            bytes.extend_from_slice(&id.to_le_bytes());
            bytes.extend_from_slice(&[0, 0]);
            bytes.extend_from_slice(&(name.len() as u16).to_le_bytes());
            bytes.extend_from_slice(name.as_bytes());
        }
        bytes
    }

    #[test]
    fn ids_and_names_that_break_the_rules_are_refused_even_with_a_valid_checksum() {
        let refused = |version, next_id, entries: &[(u32, &str)], reason: &str| {
            let decoded = Catalog::decode(&sealed(body(version, next_id, entries)));
            assert!(
                decoded.as_ref().is_err_and(|(_, r)| r.contains(reason)),
                "{entries:?}: {decoded:?}"
            );
        };
        refused(1, 0, &[(0, "a"), (2, "b")], "0, 1, 2");
        refused(2, 5, &[(3, "a"), (1, "b")], "do not increase");
        refused(2, 5, &[(3, "a"), (3, "b")], "do not increase");
        refused(2, 4, &[(1, "a"), (4, "b")], "not below the next id");
        refused(2, 5, &[(1, "a"), (3, "a")], "one name");
        refused(2, 5, &[(1, "a"), (3, "")], "empty or too long");
        refused(2, 5, &[(1, &"x".repeat(256))], "empty or too long");
        let fine = Catalog::decode(&sealed(body(2, 9, &[(1, "a"), (7, "b")])));
        assert_eq!(fine.map(|c| c.next_id()), Ok(9));
    }

    #[test]
    fn the_last_id_is_refused_cleanly() {
        let spent = Catalog {
            entries: Vec::new(),
            next_id: u32::MAX,
        };
        let mut decoded = Catalog::decode(&spent.encode()).expect("a valid catalog");
        assert!(matches!(
            decoded.add("t", TableKind::Ordered, KeyType::U64),
            Err(Error::InvalidTableName { .. })
        ));
        assert!(decoded.entries().is_empty(), "nothing was added");
    }

    #[test]
    fn every_truncation_and_bit_flip_is_refused() {
        for bytes in [sample().encode(), with_deletion().encode()] {
            for len in 0..bytes.len() {
                assert!(
                    Catalog::decode(&bytes[..len]).is_err(),
                    "truncated to {len}"
                );
            }
            for bit in 0..bytes.len() * 8 {
                let mut flipped = bytes.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                assert!(Catalog::decode(&flipped).is_err(), "bit {bit} flipped");
            }
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("t").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(256)).is_err());
    }
}
