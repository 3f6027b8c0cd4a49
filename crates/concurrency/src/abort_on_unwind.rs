//! A guard that turns a panic inside a structural change into an abort.
//!
//! Between the freeze of a group and the last grace period of its replacement (XIndex §4.2,
//! steps 1–4), readers and writers count on the change finishing: a frozen group's inserts wait
//! for the temporary buffer that phase 1 publishes, and a hash group's pointer records must be
//! replaced before any later resize places pointers to them. A panic there (a failed
//! assertion, a test hook) unwinding past the change would leave writers waiting forever or,
//! worse, records that readers follow into memory that holds no value. No caller can repair
//! that, so the process stops instead. That includes a failed assertion in a test's hook at one
//! of those phases: the test binary stops with the guard's message, written straight to the
//! standard error so that the test harness's capture cannot swallow it; the panic's own
//! message is in the captured output the abort discards (rerun with `--nocapture`).

/// Aborts the process if it is dropped while its thread unwinds from a panic raised since it
/// was created. A guard created in a destructor that runs during an unwind (an index dropped
/// while its owner's panic unwinds) does not abort when its scope completes (a panic in that
/// scope aborts anyway: it is a panic during a panic).
#[must_use = "the guard covers the scope it lives in"]
#[derive(Debug)]
pub struct AbortOnUnwind {
    /// What is under way, for the message printed before the abort.
    what: &'static str,
    /// Whether the thread was already unwinding when the guard was created.
    unwinding_before: bool,
}

impl AbortOnUnwind {
    /// Covers the rest of the caller's scope, naming the change under way (`"a compaction"`).
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            unwinding_before: std::thread::panicking(),
        }
    }
}

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.unwinding_before {
            let message = format!(
                "learnkv: a panic in the middle of {} would leave the index unusable; aborting \
                 (under `cargo test`, `--nocapture` shows the panic)\n",
                self.what
            );
            // Not `eprintln!`, which a test harness captures and the abort then discards.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), message.as_bytes());
            std::process::abort();
        }
    }
}

#[cfg(all(test, target_os = "linux", not(loom)))]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    use super::*;

    const CHILD: &str = "LEARNKV_ABORT_ON_UNWIND_CHILD";

    /// A destructor that runs a whole change under a guard.
    struct ChangeInADestructor;

    impl Drop for ChangeInADestructor {
        fn drop(&mut self) {
            let guard = AbortOnUnwind::new("a test's change");
            drop(guard);
        }
    }

    #[test]
    fn only_a_panic_under_the_guard_aborts() {
        if let Ok(case) = std::env::var(CHILD) {
            let _change = (case == "unwinding").then_some(ChangeInADestructor);
            let guard = AbortOnUnwind::new("a test's change");
            if case != "under" {
                drop(guard);
            }
            panic!("an injected panic");
        }
        let run = |case: &str| {
            Command::new(std::env::current_exe().expect("the test binary"))
                .args([
                    "--exact",
                    "abort_on_unwind::tests::only_a_panic_under_the_guard_aborts",
                ])
                .env(CHILD, case)
                .output()
                .expect("the child runs")
        };
        let under = run("under");
        assert_eq!(under.status.signal(), Some(libc::SIGABRT), "{under:?}");
        // The harness captures the child's output, but not the guard's message.
        let stderr = String::from_utf8_lossy(&under.stderr);
        assert!(stderr.contains("middle of a test's change"), "{stderr}");
        // After the guard's scope, and in a change that completes in a destructor run by the
        // unwind, the panic unwinds and fails the child's test.
        for case in ["after", "unwinding"] {
            let child = run(case);
            assert_eq!(child.status.signal(), None, "{case}: {child:?}");
            assert!(!child.status.success(), "{case}: {child:?}");
        }
    }
}
