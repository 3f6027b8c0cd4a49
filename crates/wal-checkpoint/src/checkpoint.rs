//! Fuzzy checkpoints (XIndex §5): an index scan written between two timestamps `t_begin` and
//! `t_end`, to a temporary file that is fsynced, renamed to `checkpoint-<t_end>.ckpt` and made
//! permanent by an fsync of the directory. The scan is not a snapshot; recovery replays the log
//! from `t_begin` over it (see [`crate::recovery`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::faults::{self, FaultPlan};
use crate::format::{
    self, CHECKPOINT_HEADER, CHECKPOINT_TRAILER, CheckpointHeader, CheckpointTrailer, MAX_PAYLOAD,
};
use crate::recovery::Arena;

/// The name of the temporary file a checkpoint is written to.
pub(crate) const TEMP_NAME: &str = "checkpoint.tmp";

/// The file name of the checkpoint ending at `t_end`.
pub(crate) fn checkpoint_name(t_end: u64) -> String {
    format!("checkpoint-{t_end:020}.ckpt")
}

/// Parses a checkpoint file name into its `t_end`.
pub(crate) fn parse_checkpoint_name(name: &str) -> Option<u64> {
    name.strip_prefix("checkpoint-")?
        .strip_suffix(".ckpt")?
        .parse()
        .ok()
}

/// Receives the entries of a checkpoint from the caller's index scan.
#[derive(Debug)]
pub struct CheckpointWriter {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    count: u64,
    crc: u32,
    bytes: u64,
    faults: Option<Arc<FaultPlan>>,
}

impl CheckpointWriter {
    pub(crate) fn create(dir: &Path, t_begin: u64, faults: Option<Arc<FaultPlan>>) -> Result<Self> {
        let path = dir.join(TEMP_NAME);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut buf = Vec::with_capacity(1 << 20);
        buf.extend_from_slice(
            &CheckpointHeader {
                t_begin,
                t_end: t_begin,
            }
            .encode(),
        );
        Ok(Self {
            file,
            path,
            buf,
            count: 0,
            crc: 0,
            bytes: 0,
            faults,
        })
    }

    /// Adds the pair (`key`, `value`) of `table` to the checkpoint.
    pub fn put(&mut self, table: u32, key: &[u8], value: &[u8]) -> Result<()> {
        let size = 8 + key.len() + value.len();
        if size > MAX_PAYLOAD {
            return Err(Error::TooLarge {
                size: size as u64,
                limit: MAX_PAYLOAD as u64,
            });
        }
        let start = self.buf.len();
        let len = format::encode_entry(&mut self.buf, table, key, value);
        self.crc = crc32c::crc32c_append(self.crc, &self.buf[start..start + len]);
        self.count += 1;
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }

    /// How many entries were added so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    fn flush(&mut self) -> Result<()> {
        faults::write_all(&mut self.file, &self.buf, self.faults.as_deref())
            .map_err(|e| Error::io(&self.path, e))?;
        self.bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Writes the trailer and the final header, fsyncs, renames to the checkpoint's name and
    /// fsyncs the directory. Returns the path and the file's size.
    pub(crate) fn finish(mut self, dir: &Path, t_begin: u64, t_end: u64) -> Result<(PathBuf, u64)> {
        let trailer = CheckpointTrailer {
            count: self.count,
            crc: self.crc,
        };
        self.buf.extend_from_slice(&trailer.encode());
        self.flush()?;
        let header = CheckpointHeader { t_begin, t_end }.encode();
        let plan = self.faults.as_deref();
        let path = self.path.clone();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| faults::write_all(&mut self.file, &header, plan))
            .and_then(|()| faults::sync(&self.file, plan))
            .map_err(|e| Error::io(&path, e))?;
        let size = self.bytes;
        let target = dir.join(checkpoint_name(t_end));
        faults::rename(&path, &target).map_err(|e| Error::io(&target, e))?;
        faults::sync_dir(dir).map_err(|e| Error::io(dir, e))?;
        Ok((target, size))
    }
}

/// Reads only the header of the checkpoint at `path`.
pub(crate) fn read_header(path: &Path) -> Result<CheckpointHeader> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = [0; CHECKPOINT_HEADER];
    file.read_exact(&mut bytes).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::corrupt(path, 0, "file shorter than a checkpoint header")
        } else {
            Error::io(path, e)
        }
    })?;
    CheckpointHeader::decode(&bytes).map_err(|reason| Error::corrupt(path, 0, reason))
}

/// Reads and checks the whole checkpoint at `path` into an arena.
pub(crate) fn read(path: &Path) -> Result<(CheckpointHeader, Arena)> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    let header =
        CheckpointHeader::decode(&bytes).map_err(|reason| Error::corrupt(path, 0, reason))?;
    if bytes.len() < CHECKPOINT_HEADER + CHECKPOINT_TRAILER {
        return Err(Error::corrupt(
            path,
            bytes.len() as u64,
            "checkpoint truncated before its trailer",
        ));
    }
    let end = bytes.len() - CHECKPOINT_TRAILER;
    let trailer = CheckpointTrailer::decode(&bytes[end..])
        .map_err(|reason| Error::corrupt(path, end as u64, reason))?;
    let body = &bytes[CHECKPOINT_HEADER..end];
    if crc32c::crc32c(body) != trailer.crc {
        return Err(Error::corrupt(
            path,
            CHECKPOINT_HEADER as u64,
            "checkpoint entries checksum mismatch",
        ));
    }
    let mut arena = Arena::default();
    let mut at = 0;
    let mut count = 0u64;
    while at < body.len() {
        let offset = (CHECKPOINT_HEADER + at) as u64;
        match format::read_frame(&body[at..], format::Seed::PLAIN) {
            format::Frame::Valid(payload, len) => {
                let (table, key, value) = format::decode_entry(payload)
                    .map_err(|reason| Error::corrupt(path, offset, reason))?;
                arena.push(table, key, value);
                at += len;
                count += 1;
            }
            format::Frame::Short => {
                return Err(Error::corrupt(path, offset, "checkpoint entry truncated"));
            }
            format::Frame::Bad(reason) => return Err(Error::corrupt(path, offset, reason)),
        }
    }
    if count != trailer.count {
        return Err(Error::corrupt(
            path,
            end as u64,
            format!(
                "trailer counts {} entries, file holds {count}",
                trailer.count
            ),
        ));
    }
    Ok((header, arena))
}
