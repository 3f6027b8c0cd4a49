//! The catalog: the database's tables with their ids, kinds and key types, in the file
//! `catalog` (DESIGN.md, "Files").
//!
//! Layout, little-endian: the magic `LKVCATLG`, a `u32` format version, a `u32` entry count;
//! per entry a `u32` id, a `u8` kind (bit 7 set: the table was deleted), a `u8` key type, a
//! `u16` name length and the UTF-8 name; then the CRC32C of every byte before it. A table's id
//! is its position; a deleted table keeps its entry, so its id is never reused and recovery
//! knows to skip the log records and checkpoint entries that still name it. Version 1 (before
//! deletion existed) is read too, and written while no table was deleted. The file is replaced
//! whole: written to `catalog.tmp`, fsynced, renamed over `catalog`, and the directory fsynced,
//! before the new table takes its first write (and before a deletion returns), so the log never
//! names a table the catalog lacks.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::key::{KeyType, TableKind};

const MAGIC: &[u8; 8] = b"LKVCATLG";
const VERSION: u32 = 2;
/// The kind byte's flag of a deleted table.
const DELETED: u8 = 0x80;
/// The catalog's file name.
pub(crate) const FILE: &str = "catalog";
/// The longest table name, in bytes.
pub const MAX_TABLE_NAME: usize = 255;

/// One table of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) kind: TableKind,
    pub(crate) key: KeyType,
    /// The table was deleted: its id stays taken and its data is ignored.
    pub(crate) deleted: bool,
}

/// The tables, in id order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Catalog {
    entries: Vec<Entry>,
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
        let mut entries = Vec::new();
        for id in 0..count {
            let at = reader.at as u64;
            if reader.u32()? != id {
                return Err((at, "table ids are not consecutive"));
            }
            let mut kind_byte = reader.u8()?;
            let deleted = version >= 2 && kind_byte & DELETED != 0;
            if deleted {
                kind_byte &= !DELETED;
            }
            let kind = match kind_byte {
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
            entries.push(Entry {
                name,
                kind,
                key,
                deleted,
            });
        }
        if reader.at != body.len() {
            return Err((reader.at as u64, "trailing bytes"));
        }
        Ok(Self { entries })
    }

    /// The file's bytes: version 1 while no table was deleted, so that older builds can still
    /// open the database.
    fn encode(&self) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        let version = if self.entries.iter().any(|e| e.deleted) {
            VERSION
        } else {
            1
        };
        bytes.extend_from_slice(&u32::to_le_bytes(version));
        bytes.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for (id, entry) in self.entries.iter().enumerate() {
            bytes.extend_from_slice(&(id as u32).to_le_bytes());
            let kind = match entry.kind {
                TableKind::Ordered => 0,
                TableKind::Hash => 1,
            };
            bytes.push(if entry.deleted { kind | DELETED } else { kind });
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

    /// The id and entry of the live table called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<(u32, &Entry)> {
        self.entries
            .iter()
            .position(|e| !e.deleted && e.name == name)
            .map(|id| (id as u32, &self.entries[id]))
    }

    /// Marks table `id` deleted.
    pub(crate) fn delete(&mut self, id: u32) {
        self.entries[id as usize].deleted = true;
    }

    /// Adds a table (its name checked by the caller); its id.
    pub(crate) fn add(&mut self, entry: Entry) -> u32 {
        self.entries.push(entry);
        (self.entries.len() - 1) as u32
    }

    /// Every table, deleted ones included, in id order.
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
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
        for (name, kind, key) in [
            ("users", TableKind::Ordered, KeyType::Bytes),
            ("sessions", TableKind::Hash, KeyType::U64),
        ] {
            catalog.add(Entry {
                name: name.into(),
                kind,
                key,
                deleted: false,
            });
        }
        catalog
    }

    #[test]
    fn catalogs_round_trip() {
        let catalog = sample();
        assert_eq!(Catalog::decode(&catalog.encode()), Ok(catalog.clone()));
        assert_eq!(catalog.find("sessions").map(|(id, _)| id), Some(1));
        assert!(catalog.find("nope").is_none());
    }

    #[test]
    fn deleted_tables_keep_their_ids_and_names_can_be_reused() {
        let mut catalog = sample();
        catalog.delete(0);
        assert!(catalog.find("users").is_none());
        let id = catalog.add(Entry {
            name: "users".into(),
            kind: TableKind::Hash,
            key: KeyType::U64,
            deleted: false,
        });
        assert_eq!(id, 2, "a deleted table's id is not reused");
        let decoded = Catalog::decode(&catalog.encode()).expect("a valid catalog");
        assert_eq!(decoded, catalog);
        assert!(decoded.entries()[0].deleted);
        assert_eq!(decoded.find("users").map(|(id, _)| id), Some(2));
    }

    #[test]
    fn version_1_catalogs_are_read_and_know_no_deletion() {
        let rewrite = |mut bytes: Vec<u8>| {
            bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
            let body = bytes.len() - 4;
            let crc = crc32c::crc32c(&bytes[..body]);
            bytes[body..].copy_from_slice(&crc.to_le_bytes());
            bytes
        };
        let catalog = sample();
        assert_eq!(
            catalog.encode()[8..12],
            1u32.to_le_bytes(),
            "written as version 1 while nothing was deleted"
        );
        assert_eq!(Catalog::decode(&rewrite(catalog.encode())), Ok(catalog));
        let mut deleted = sample();
        deleted.delete(1);
        assert!(
            Catalog::decode(&rewrite(deleted.encode())).is_err(),
            "version 1 has no deletion flag"
        );
    }

    #[test]
    fn every_truncation_and_bit_flip_is_refused() {
        let bytes = sample().encode();
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

    #[test]
    fn names_are_checked() {
        assert!(check_name("t").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(256)).is_err());
    }
}
