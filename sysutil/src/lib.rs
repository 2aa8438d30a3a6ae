//! Process and thread helpers shared by the `benches` and `tests` crates: the CPUs this
//! process may run on and pinning a thread to one (sched_getaffinity(2),
//! sched_setaffinity(2)), the `RLIMIT_NOFILE` limits (getrlimit(2), setrlimit(2)), and CPU
//! time and peak RSS from getrusage(2), and fields of `/proc/PID/status` (proc(5)).
//!
//! Linux only, like the runtime, which keeps its own affinity code for its cores.

#[cfg(not(target_os = "linux"))]
compile_error!(
    "sysutil wraps Linux calls (sched_setaffinity, RUSAGE_THREAD) and runs on Linux only"
);

use std::io;
use std::time::Duration;

/// The CPUs this process may run on, as `sched_getaffinity(2)` reports them (empty if it
/// fails).
pub fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = affinity() else {
        return Vec::new();
    };
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, inside `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Pins the calling thread to `cpu`.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot pin to CPU {cpu}: CPU numbers must be below CPU_SETSIZE"),
        ));
    }
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid `cpu_set_t` and `cpu` is below CPU_SETSIZE (checked above),
    // so the bit CPU_SET writes is inside it.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(&set)
}

/// The calling thread's CPU set.
fn affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable `cpu_set_t` of the size passed; 0 is this thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(set)
}

fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid `cpu_set_t` of the size passed; 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread while it lives and restores its former CPU set when dropped.
pub struct PinGuard {
    old: libc::cpu_set_t,
}

impl PinGuard {
    /// Pins the calling thread to `cpu`.
    pub fn new(cpu: usize) -> io::Result<PinGuard> {
        let guard = PinGuard::keep()?;
        pin_to(cpu)?;
        Ok(guard)
    }

    /// Saves the calling thread's CPU set without changing it, to restore it when dropped:
    /// for code that pins the thread itself, such as building a multi-core runtime (whose
    /// core 0 is the building thread, pinned for good).
    pub fn keep() -> io::Result<PinGuard> {
        Ok(PinGuard { old: affinity()? })
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        if let Err(e) = set_affinity(&self.old) {
            eprintln!("restoring the thread's CPU set failed: {e}");
        }
    }
}

/// `RLIMIT_NOFILE` as (soft, hard).
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    // SAFETY: all-zero bytes are a valid `rlimit`.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `lim` is a valid, writable `rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Sets the soft `RLIMIT_NOFILE` (the hard limit is kept).
pub fn set_nofile_soft(soft: u64) -> io::Result<()> {
    let (_, hard) = nofile_limit()?;
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid `rlimit`.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft limit.
pub fn raise_nofile() -> io::Result<u64> {
    let (soft, hard) = nofile_limit()?;
    if soft < hard {
        set_nofile_soft(hard)?;
    }
    Ok(soft.max(hard))
}

/// Whose CPU time [`cpu_time`] reads (getrusage(2)'s `who`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// The whole process, every thread, ended ones included: `RUSAGE_SELF`.
    Process,
    /// The calling thread: `RUSAGE_THREAD`.
    Thread,
    /// The children that have ended and been waited for: `RUSAGE_CHILDREN`.
    Children,
}

fn rusage(who: Who) -> Option<libc::rusage> {
    let who = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Thread => libc::RUSAGE_THREAD,
        Who::Children => libc::RUSAGE_CHILDREN,
    };
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` for the call to fill.
    (unsafe { libc::getrusage(who, &mut ru) } == 0).then_some(ru)
}

/// CPU time (user + system) `who` has used so far; zero if getrusage(2) fails.
pub fn cpu_time(who: Who) -> Duration {
    let Some(ru) = rusage(who) else {
        return Duration::ZERO;
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The process's peak resident set size in KiB, getrusage(2)'s `ru_maxrss` (it only grows,
/// and survives execve(2)); zero if getrusage fails.
pub fn max_rss_kib() -> u64 {
    rusage(Who::Process).map_or(0, |ru| u64::try_from(ru.ru_maxrss).unwrap_or(0))
}

/// A field of `/proc/PID/status` given in kB (`VmRSS`, `VmHWM`; proc(5)), in KiB; `pid`
/// `None` reads this process's (`/proc/self/status`).
pub fn proc_status_kib(pid: Option<u32>, key: &str) -> io::Result<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no {key} in {path}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_status_fields() {
        assert!(proc_status_kib(None, "VmRSS").unwrap() > 0);
        let pid = Some(std::process::id());
        assert!(proc_status_kib(pid, "VmHWM").unwrap() > 0);
        assert!(proc_status_kib(pid, "NoSuchKey").is_err());
    }

    #[test]
    fn pin_guard_pins_and_restores() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        // A thread of its own: it inherits this thread's set, and the pin dies with it.
        std::thread::spawn(move || {
            {
                let _pin = PinGuard::new(last).unwrap();
                assert_eq!(allowed_cpus(), [last]);
            }
            assert_eq!(allowed_cpus(), cpus);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_cpu_past_cpu_setsize_is_an_error() {
        let err = pin_to(5000).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn nofile() {
        let (soft, hard) = nofile_limit().unwrap();
        assert!(soft <= hard);
        assert_eq!(raise_nofile().unwrap(), hard);
        assert_eq!(nofile_limit().unwrap(), (hard, hard));
    }

    #[test]
    fn rusage_grows() {
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(20) {
            std::hint::black_box(0u64);
        }
        assert!(cpu_time(Who::Thread) > Duration::ZERO);
        assert!(cpu_time(Who::Process) >= cpu_time(Who::Thread));
        assert!(max_rss_kib() > 0);
    }
}
