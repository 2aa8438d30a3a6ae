//! `seccomp-deny [--epoll] [--] COMMAND [ARGS...]`: runs COMMAND under a seccomp filter that
//! refuses io_uring the way a container runtime's default seccomp profile does (Docker's
//! default profile, Kubernetes' `RuntimeDefault`): `io_uring_setup(2)`, `io_uring_enter(2)`
//! and `io_uring_register(2)` fail with `EPERM`, every other system call is allowed.
//!
//! It is for running the project's tests and examples the way they run in such a container,
//! where the runtime must notice on its own that io_uring is refused and fall back to its
//! epoll backend. With `--epoll` the epoll calls (`epoll_create`, `epoll_create1`,
//! `epoll_ctl`, `epoll_wait`, `epoll_pwait`, `epoll_pwait2`) fail with `EPERM` as well, for
//! checking what happens when both backends are refused.
//!
//! The filter is installed with `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `seccomp(SECCOMP_SET_MODE_FILTER)` in this (single-threaded) process, then COMMAND is
//! executed with `execvp(3)` and inherits it, as do all its threads and children. Like the
//! container profiles, the filter only knows the native architecture's system call numbers:
//! calls made through another ABI (32-bit x86 on x86_64, for example) are allowed, and x32
//! calls on x86_64 (numbers with bit 30 set) do not match and are allowed too.
//!
//! Exit status: that of COMMAND; 1 if the filter cannot be installed; 2 for a usage error;
//! 127 if COMMAND cannot be executed.
//!
//! Linux on x86_64 and aarch64 only; elsewhere it refuses to run (exit 1).

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: seccomp-deny [--epoll] [--] COMMAND [ARGS...]

Runs COMMAND with io_uring_setup, io_uring_enter and io_uring_register failing with EPERM,
as under a container runtime's default seccomp profile.

  --epoll   also make the epoll calls (epoll_create, epoll_create1, epoll_ctl, epoll_wait,
            epoll_pwait, epoll_pwait2) fail with EPERM
";

/// What the command line asks for.
struct Args {
    /// Refuse the epoll calls as well.
    epoll: bool,
    /// The command and its arguments (never empty).
    command: Vec<OsString>,
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            // `--help`: usage on stdout, success. Nothing to do if stdout is gone.
            let _ = io::stdout().write_all(USAGE.as_bytes());
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            let _ = writeln!(io::stderr(), "seccomp-deny: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    if let Err(message) = filter::install(args.epoll) {
        let _ = writeln!(io::stderr(), "seccomp-deny: {message}");
        return ExitCode::from(1);
    }

    let (program, rest) = match args.command.split_first() {
        Some(split) => split,
        // `parse_args` never returns an empty command; treat it as a usage error anyway.
        None => return ExitCode::from(2),
    };
    // `exec` only returns on failure.
    let err = Command::new(program).args(rest).exec();
    let _ = writeln!(
        io::stderr(),
        "seccomp-deny: cannot execute `{}`: {err}",
        program.to_string_lossy()
    );
    ExitCode::from(127)
}

/// Parses the arguments after the program name: `Ok(None)` for `--help`, `Err` with a
/// message for a usage error.
fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Option<Args>, String> {
    let mut args = args.into_iter();
    let mut epoll = false;
    let mut command = Vec::new();
    for arg in args.by_ref() {
        match arg.to_str() {
            Some("--epoll") => epoll = true,
            Some("-h" | "--help") => return Ok(None),
            Some("--") => break,
            Some(option) if option.starts_with('-') => {
                return Err(format!("unknown option `{option}`"));
            }
            _ => {
                command.push(arg);
                break;
            }
        }
    }
    command.extend(args);
    if command.is_empty() {
        return Err("no command given".to_owned());
    }
    Ok(Some(Args { epoll, command }))
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod filter {
    use std::io;
    use std::mem::offset_of;

    /// `AUDIT_ARCH_X86_64` (`EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`).
    #[cfg(target_arch = "x86_64")]
    const NATIVE_AUDIT_ARCH: u32 = 0xC000_003E;
    /// `AUDIT_ARCH_AARCH64` (`EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`).
    #[cfg(target_arch = "aarch64")]
    const NATIVE_AUDIT_ARCH: u32 = 0xC000_00B7;

    /// The io_uring calls, always refused.
    const IO_URING: &[libc::c_long] = &[
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];

    /// The epoll calls, refused with `--epoll`. aarch64 has no `epoll_create` or
    /// `epoll_wait`, only their successors.
    #[cfg(target_arch = "x86_64")]
    const EPOLL: &[libc::c_long] = &[
        libc::SYS_epoll_create,
        libc::SYS_epoll_create1,
        libc::SYS_epoll_ctl,
        libc::SYS_epoll_wait,
        libc::SYS_epoll_pwait,
        libc::SYS_epoll_pwait2,
    ];
    #[cfg(target_arch = "aarch64")]
    const EPOLL: &[libc::c_long] = &[
        libc::SYS_epoll_create1,
        libc::SYS_epoll_ctl,
        libc::SYS_epoll_pwait,
        libc::SYS_epoll_pwait2,
    ];

    // The classic BPF opcodes the filter uses (each fits the 16-bit `code` field).
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JMP_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

    const RET_ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    // EPERM is 1, well inside SECCOMP_RET_DATA.
    const RET_EPERM: u32 = libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA);

    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }

    /// The filter program: allow foreign architectures, `EPERM` for the listed calls,
    /// allow the rest.
    fn program(epoll: bool) -> Result<Vec<libc::sock_filter>, String> {
        let denied: Vec<libc::c_long> = IO_URING
            .iter()
            .chain(if epoll { EPOLL } else { &[] })
            .copied()
            .collect();
        // Both fields are 32 bits wide and their offsets are tiny.
        let arch_offset = offset_of!(libc::seccomp_data, arch) as u32;
        let nr_offset = offset_of!(libc::seccomp_data, nr) as u32;

        let mut prog = vec![
            stmt(LD_W_ABS, arch_offset),
            // Native arch: skip the next instruction. Otherwise allow.
            jump(JMP_JEQ_K, NATIVE_AUDIT_ARCH, 1, 0),
            stmt(RET_K, RET_ALLOW),
            stmt(LD_W_ABS, nr_offset),
        ];
        for (i, &nr) in denied.iter().enumerate() {
            let nr = u32::try_from(nr)
                .map_err(|_| format!("system call number {nr} does not fit the filter"))?;
            // On a match jump over the remaining comparisons and the final ALLOW to the
            // EPERM return.
            let to_deny = u8::try_from(denied.len() - i)
                .map_err(|_| "too many system calls for one filter".to_owned())?;
            prog.push(jump(JMP_JEQ_K, nr, to_deny, 0));
        }
        prog.push(stmt(RET_K, RET_ALLOW));
        prog.push(stmt(RET_K, RET_EPERM));
        Ok(prog)
    }

    /// Installs the filter on the calling thread (the only one), with `no_new_privs` set
    /// first, as an unprivileged process must.
    pub(crate) fn install(epoll: bool) -> Result<(), String> {
        let mut prog = program(epoll)?;
        let fprog = libc::sock_fprog {
            len: u16::try_from(prog.len())
                .map_err(|_| "the filter program is too long".to_owned())?,
            filter: prog.as_mut_ptr(),
        };

        // SAFETY: PR_SET_NO_NEW_PRIVS takes an integer argument (1) and the unused trailing
        // arguments must be 0; no memory is passed.
        let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
        if rc != 0 {
            return Err(format!(
                "prctl(PR_SET_NO_NEW_PRIVS) failed: {}",
                io::Error::last_os_error()
            ));
        }

        // SAFETY: `fprog` is a valid `sock_fprog` whose `filter` points to `prog`, `len`
        // initialised instructions that outlive the call (the kernel copies them); flags 0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0 as libc::c_uint,
                &fprog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(format!(
                "seccomp(SECCOMP_SET_MODE_FILTER) failed: {}",
                io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod filter {
    /// Only x86_64 and aarch64 system call numbers and audit arches are known here.
    pub(crate) fn install(_epoll: bool) -> Result<(), String> {
        Err(format!(
            "cannot build the filter: only x86_64 and aarch64 are supported, not {}",
            std::env::consts::ARCH
        ))
    }
}
