//! String key sets: XIndex §6.2's random byte strings (`R{L}`) and a stand-in for its Memetracker
//! quote URLs (long shared prefixes, about 62 bytes on average, at most 128), HydraList §6.1.2's
//! e-mail addresses (domain first, about 20 bytes on average, at most 32), and the real SCOWL word
//! list.
//!
//! Every set is returned sorted (bytewise) and unique, exactly as many keys as requested, the same
//! for the same seed on every platform.

use std::path::Path;

use rand::{Rng, RngExt};

use crate::dataset::unique_sorted;
use crate::error::{Error, Result};
use crate::seed;

/// The SCOWL word list (see `datasets/README.md` and `datasets/words-american-insane.COPYRIGHT`).
const WORDS: &str = include_str!("../../../../datasets/words-american-insane.txt");

/// The longest URL-like key (XIndex's quote set: at most 128 bytes).
pub const MAX_URL_LEN: usize = 128;

/// The longest e-mail key (HydraList §6.1.2: at most 32 bytes).
pub const MAX_EMAIL_LEN: usize = 32;

/// `n` random byte strings of `len` bytes each, every byte uniform in `0..=255` (XIndex's
/// `R{len}`, e.g. R128). More keys than `256^len` is [`Error::InvalidParameter`].
///
/// ```
/// let keys = workload::dataset::string::random_bytes(100, 16, 1)?;
/// assert!(keys.iter().all(|k| k.len() == 16));
/// # Ok::<(), workload::Error>(())
/// ```
pub fn random_bytes(n: usize, len: usize, seed: u64) -> Result<Vec<Vec<u8>>> {
    let possible = u32::try_from(len)
        .ok()
        .and_then(|len| 256u128.checked_pow(len));
    if let Some(possible) = possible
        && n as u128 > possible
    {
        return Err(Error::invalid(format!(
            "r{len}: only {possible} distinct keys exist, {n} requested"
        )));
    }
    let mut rng = seed::rng(seed, seed::stream::RANDOM_BYTES);
    Ok(unique_sorted(Vec::new(), n, || {
        let mut key = vec![0; len];
        rng.fill(&mut key[..]);
        key
    }))
}

/// Webmail domains that most addresses use, as in real address lists.
const COMMON_DOMAINS: [&str; 12] = [
    "gmail.com",
    "yahoo.com",
    "hotmail.com",
    "outlook.com",
    "aol.com",
    "icloud.com",
    "mail.ru",
    "gmx.de",
    "web.de",
    "yahoo.co.uk",
    "live.com",
    "protonmail.com",
];

/// Top-level domains of the other addresses' organisations.
const TLDS: [&str; 10] = [
    "com", "net", "org", "edu", "io", "de", "co.uk", "fr", "jp", "ac.uk",
];

/// Separators between a user's first and last name.
const SEPARATORS: [&str; 4] = [".", "_", "", "-"];

/// `n` e-mail-like keys in the form of HydraList's e-mail set (§6.1.2: 89M real addresses,
/// 20 bytes on average, at most 32, user name and domain swapped as tries prefer, `abc@xyz.com` →
/// `xyz.com@abc`): `domain@first{sep}last{digits}`, at most [`MAX_EMAIL_LEN`] bytes (longer draws
/// are redrawn) and about 20 on average. The domain is one of a dozen webmail providers for 70 %
/// of the keys (long shared prefixes) and a random organisation under a common top-level domain
/// for the rest; the user is one or two pronounceable random names, with a number on 40 % of
/// them. Only the swap is applied: the paper does not reverse the domain's dotted parts (its
/// authors' generator script does, see `digests/hydralist.md`).
///
/// ```
/// let keys = workload::dataset::string::emails(100, 1);
/// assert!(keys.iter().all(|k| k.len() <= workload::dataset::string::MAX_EMAIL_LEN));
/// assert!(keys.iter().all(|k| k.iter().filter(|&&b| b == b'@').count() == 1));
/// ```
pub fn emails(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = seed::rng(seed, seed::stream::EMAIL);
    unique_sorted(Vec::new(), n, || {
        loop {
            let key = email(&mut rng);
            if key.len() <= MAX_EMAIL_LEN {
                return key.into_bytes();
            }
        }
    })
}

/// One `domain@user` key of [`emails`], of any length.
fn email(rng: &mut impl Rng) -> String {
    let mut key = if rng.random_bool(0.7) {
        COMMON_DOMAINS[rng.random_range(0..COMMON_DOMAINS.len())].to_owned()
    } else {
        format!(
            "{}.{}",
            pseudo_word(rng, 2, 4),
            TLDS[rng.random_range(0..TLDS.len())]
        )
    };
    key.push('@');
    key.push_str(&pseudo_word(rng, 1, 3));
    if rng.random_bool(0.6) {
        key.push_str(SEPARATORS[rng.random_range(0..SEPARATORS.len())]);
        key.push_str(&pseudo_word(rng, 1, 3));
    }
    if rng.random_bool(0.4) {
        key.push_str(&rng.random_range(1..1_000u32).to_string());
    }
    key
}

/// News sites of the URL-like set: every key starts with one of these.
const HOSTS: [&str; 16] = [
    "https://www.nytimes.com/",
    "https://www.washingtonpost.com/",
    "https://www.theguardian.com/",
    "https://www.bbc.co.uk/news/",
    "https://edition.cnn.com/",
    "https://www.reuters.com/article/",
    "https://www.latimes.com/",
    "https://www.usatoday.com/story/",
    "https://www.huffpost.com/entry/",
    "https://www.foxnews.com/",
    "https://abcnews.go.com/",
    "https://www.npr.org/templates/story/",
    "https://www.politico.com/news/",
    "https://www.wsj.com/articles/",
    "https://blog.example.org/",
    "https://www.telegraph.co.uk/news/",
];

/// Sections of the URL-like set's paths.
const SECTIONS: [&str; 8] = [
    "politics",
    "world",
    "us",
    "business",
    "technology",
    "sports",
    "opinion",
    "health",
];

/// `n` URL-like keys, a stand-in for XIndex's Memetracker quote URLs:
/// `{site}{section}/{yyyy}/{mm}/{dd}/{slug}` with 16 sites, 8 sections, dates in 2008–2009 (the
/// Memetracker period) and a slug of 1–5 pseudo-words: about 62 bytes on average, like the quote
/// set, and never over [`MAX_URL_LEN`]. Keys share long prefixes (site, section, date), which is
/// what makes the quote set hard for partial-key models.
///
/// ```
/// let keys = workload::dataset::string::urls(100, 1);
/// assert!(keys.iter().all(|k| k.starts_with(b"https://") && k.len() <= 128));
/// ```
pub fn urls(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = seed::rng(seed, seed::stream::URL);
    unique_sorted(Vec::new(), n, || {
        let mut key = String::from(HOSTS[rng.random_range(0..HOSTS.len())]);
        key.push_str(SECTIONS[rng.random_range(0..SECTIONS.len())]);
        let (year, month, day) = (
            rng.random_range(2008..=2009),
            rng.random_range(1..=12),
            rng.random_range(1..=28),
        );
        key.push_str(&format!("/{year}/{month:02}/{day:02}/"));
        for word in 0..rng.random_range(1..=5) {
            if word > 0 {
                key.push('-');
            }
            key.push_str(&pseudo_word(&mut rng, 1, 3));
        }
        let mut key = key.into_bytes();
        key.truncate(MAX_URL_LEN);
        key
    })
}

/// The real SCOWL word list (American English, "insane" size): its distinct lines, sorted
/// bytewise.
pub fn words() -> Vec<Vec<u8>> {
    distinct_lines(WORDS)
}

/// The distinct non-empty lines of a text file (a trailing `\r` is dropped), sorted bytewise.
/// The file may hold any bytes except that lines end at `\n`.
pub fn lines(path: &Path) -> Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).map_err(|source| Error::io(path, source))?;
    let mut keys: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

/// The distinct non-empty lines of `text`, sorted bytewise.
fn distinct_lines(text: &str) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = text
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| line.as_bytes().to_vec())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// A pronounceable lowercase word of `min..=max` syllables (consonant, vowel, sometimes a final
/// consonant).
fn pseudo_word(rng: &mut impl Rng, min: usize, max: usize) -> String {
    const CONSONANTS: &[u8] = b"bcdfghjklmnprstvwz";
    const VOWELS: &[u8] = b"aeiouy";
    let mut word = String::new();
    for _ in 0..rng.random_range(min..=max) {
        word.push(char::from(
            CONSONANTS[rng.random_range(0..CONSONANTS.len())],
        ));
        word.push(char::from(VOWELS[rng.random_range(0..VOWELS.len())]));
        if rng.random_bool(0.3) {
            word.push(char::from(
                CONSONANTS[rng.random_range(0..CONSONANTS.len())],
            ));
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: &[Vec<u8>], n: usize) {
        assert_eq!(keys.len(), n);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
    }

    #[test]
    fn generators_are_exact_sorted_unique_and_deterministic() {
        for n in [0, 1, 10_000] {
            let random = random_bytes(n, 8, 3).expect("enough keys exist");
            check(&random, n);
            assert!(random.iter().all(|k| k.len() == 8));
            assert_eq!(random, random_bytes(n, 8, 3).expect("enough keys exist"));
            check(&emails(n, 3), n);
            assert_eq!(emails(n, 3), emails(n, 3));
            check(&urls(n, 3), n);
            assert_eq!(urls(n, 3), urls(n, 3));
        }
        assert_ne!(emails(100, 1), emails(100, 2));
        assert_ne!(urls(100, 1), urls(100, 2));
    }

    #[test]
    fn tiny_key_spaces_fill_up_or_refuse() {
        let all = random_bytes(256, 1, 1).expect("exactly 256 one-byte keys exist");
        assert_eq!(all, (0..=255u8).map(|b| vec![b]).collect::<Vec<_>>());
        assert!(random_bytes(257, 1, 1).is_err());
        assert!(random_bytes(2, 0, 1).is_err());
        assert_eq!(
            random_bytes(1, 0, 1).expect("the empty key"),
            [Vec::<u8>::new()]
        );
    }

    /// The mean length of `keys`, in bytes.
    fn mean_len(keys: &[Vec<u8>]) -> f64 {
        keys.iter().map(Vec::len).sum::<usize>() as f64 / keys.len() as f64
    }

    #[test]
    fn urls_look_like_the_quote_set() {
        let keys = urls(10_000, 5);
        let mean = mean_len(&keys);
        assert!((50.0..75.0).contains(&mean), "mean length {mean}");
        assert!(keys.iter().all(|k| k.len() <= MAX_URL_LEN));
    }

    #[test]
    fn emails_look_like_hydralists_set() {
        let keys = emails(10_000, 5);
        let mean = mean_len(&keys);
        assert!((19.0..21.0).contains(&mean), "mean length {mean}");
        assert!(keys.iter().all(|k| k.len() <= MAX_EMAIL_LEN));
        assert!(
            keys.iter().any(|k| k.len() == MAX_EMAIL_LEN),
            "the cap is reached"
        );
        // Domain first: the part before the `@` ends with a top-level domain.
        let tlds: Vec<&str> = COMMON_DOMAINS
            .iter()
            .chain(&TLDS)
            .map(|domain| &domain[domain.rfind('.').map_or(0, |dot| dot + 1)..])
            .collect();
        for key in &keys {
            let text = std::str::from_utf8(key).expect("ASCII");
            let (domain, user) = text.split_once('@').expect("one `@`");
            assert!(
                tlds.iter().any(|tld| domain.ends_with(&format!(".{tld}"))),
                "{text}"
            );
            assert!(!user.is_empty() && !user.contains('@'), "{text}");
        }
    }

    #[test]
    fn word_list_is_the_real_one() {
        let words = words();
        assert!(words.len() > 600_000, "{} words", words.len());
        assert!(words.windows(2).all(|w| w[0] < w[1]));
        assert!(words.binary_search(&b"zebra".to_vec()).is_ok());
    }

    #[test]
    fn lines_reads_any_bytes_and_drops_blank_lines() {
        let path = std::env::temp_dir().join(format!("workload-lines-{}", std::process::id()));
        std::fs::write(&path, b"b\r\na\n\nb\n\xff\x00\n").expect("writable");
        assert_eq!(
            lines(&path).expect("readable"),
            [b"a".to_vec(), b"b".to_vec(), vec![0xff, 0]]
        );
        std::fs::remove_file(&path).expect("removable");
        assert!(matches!(lines(&path), Err(Error::Io { .. })));
    }
}
