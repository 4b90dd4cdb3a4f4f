//! The process's scheduling priority. A local cluster runs hundreds of daemons on a few cores
//! beside the clients that send through them; at equal priority the scheduler gives a client
//! one share among hundreds and the cluster waits on it. A daemon that lowers its own priority
//! (raises its niceness) leaves clients, the operator's commands and the load generator the
//! CPU they need, and divides the rest among the daemons as before (docs/daemon.md, "Priority").

use std::io;

/// Lower this process's scheduling priority to niceness `nice` (0 to 19; 0 leaves it as it
/// was started). Lowering needs no privilege; a process already nicer than `nice` stays so.
pub fn lower_to(nice: i32) -> io::Result<()> {
    if nice <= 0 || current()? >= nice {
        return Ok(());
    }
    set_to(nice)
}

/// Set this thread's niceness to `nice` (-20 to 19), and that of the threads and processes it
/// starts after: the bench's load generator, which must not be starved by the hundreds of
/// daemons it loads. A niceness below the thread's own needs root or CAP_SYS_NICE (an error
/// otherwise); one above it needs no privilege.
pub fn set_to(nice: i32) -> io::Result<()> {
    if current()? == nice {
        return Ok(());
    }
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// This thread's niceness.
pub fn current() -> io::Result<i32> {
    // getpriority may return -1 as a value: errno tells an error apart.
    // SAFETY: errno is this thread's; getpriority takes plain integers.
    unsafe {
        *libc::__errno_location() = 0;
        let value = libc::getpriority(libc::PRIO_PROCESS, 0);
        let errno = *libc::__errno_location();
        if value == -1 && errno != 0 {
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_leaves_the_priority_alone() {
        let before = current().unwrap();
        lower_to(0).unwrap();
        assert_eq!(current().unwrap(), before);
    }

    #[test]
    fn setting_takes_effect_both_ways_or_is_refused_without_the_privilege() {
        // Run in a child so that the test process keeps its priority.
        let exe = std::env::current_exe().unwrap();
        if std::env::var_os("CUBEROUTE_PRIORITY_CHILD").is_some() {
            let before = current().unwrap();
            match set_to(before - 1) {
                Ok(()) => {
                    assert_eq!(current().unwrap(), before - 1);
                    // Back up to where it was: allowed to anyone.
                    set_to(before).unwrap();
                    assert_eq!(current().unwrap(), before);
                }
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
                    assert_eq!(current().unwrap(), before);
                }
            }
            let higher = (before + 2).min(19);
            set_to(higher).unwrap();
            assert_eq!(current().unwrap(), higher);
            return;
        }
        let status = std::process::Command::new(exe)
            .args([
                "--exact",
                "priority::tests::setting_takes_effect_both_ways_or_is_refused_without_the_privilege",
                "--nocapture",
            ])
            .env("CUBEROUTE_PRIORITY_CHILD", "1")
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn lowering_takes_effect_in_a_child_process() {
        // Run in a child so that the test process keeps its priority.
        let exe = std::env::current_exe().unwrap();
        if std::env::var_os("CUBEROUTE_PRIORITY_CHILD").is_some() {
            let before = current().unwrap();
            let target = (before + 3).min(19);
            lower_to(target).unwrap();
            assert_eq!(current().unwrap(), target);
            // Never raised again: a lower niceness is left as it is.
            lower_to(target - 1).unwrap();
            assert_eq!(current().unwrap(), target);
            return;
        }
        let status = std::process::Command::new(exe)
            .args([
                "--exact",
                "priority::tests::lowering_takes_effect_in_a_child_process",
                "--nocapture",
            ])
            .env("CUBEROUTE_PRIORITY_CHILD", "1")
            .status()
            .unwrap();
        assert!(status.success());
    }
}
