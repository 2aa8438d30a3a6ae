//! Pinning a core's thread to its CPU: the CPUs this process may use, and checked
//! `sched_setaffinity(2)` calls.

use std::io;

use crate::error::context;

/// The CPUs this process may run on, in order.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = affinity() else {
        return vec![0];
    };
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE, so CPU_ISSET reads a bit inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// Checks that `cpu` can be named in a `cpu_set_t`, which holds CPUs `0..CPU_SETSIZE` (1024):
/// an `InvalidInput` error naming the CPU if not.
pub(crate) fn check_cpu(cpu: usize) -> io::Result<()> {
    if cpu < libc::CPU_SETSIZE as usize {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "cannot pin a core to CPU {cpu}: CPU numbers must be below {} (CPU_SETSIZE)",
            libc::CPU_SETSIZE
        ),
    ))
}

/// The calling thread's CPU affinity (to give back to [`set_affinity`]).
pub(crate) fn affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; 0 is the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r == 0 {
        Ok(set)
    } else {
        let e = io::Error::last_os_error();
        Err(context(e, "reading the thread's CPU affinity"))
    }
}

/// Sets the calling thread's CPU affinity to `set`.
pub(crate) fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a live cpu_set_t of the size passed; 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread to `cpu`.
///
/// Fails with `InvalidInput`, naming the CPU, if `cpu` is past `CPU_SETSIZE`, or (the
/// kernel's `EINVAL`) does not exist, is offline or is outside this process's cpuset; the
/// thread's affinity is then unchanged.
pub(crate) fn pin_to(cpu: usize) -> io::Result<()> {
    check_cpu(cpu)?;
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so CPU_SET writes a bit inside
    // `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(&set).map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::EINVAL) {
            " (no such CPU, or it is offline or outside this process's cpuset)"
        } else {
            ""
        };
        context(e, format!("pinning a core to CPU {cpu}{why}"))
    })
}
