//! Direct descriptors (indexes in the ring's fixed-file table) seen from the driver:
//! closing one through the ring, installing a regular fd for one, setting a socket option
//! on one without a regular fd.

use std::io;

use io_uring::{opcode, squeue, types};

use super::{op, Driver, FIXED_CLOSE_TOKEN};

impl Driver {
    /// Queues an `IORING_OP_CLOSE` of direct descriptor `index` (an index in this ring's
    /// fixed-file table), fire and forget: its CQE, posted only on failure where the kernel
    /// can skip successful ones, is dropped. The caller guarantees that no op still names
    /// the index (the [`SharedFd`](crate::ext::SharedFd) invariant) and that nothing else
    /// owns it; the slot is free for the kernel to allocate again once the close has run,
    /// at the next submission.
    pub(crate) fn close_fixed(&mut self, index: u32) {
        let mut sqe = opcode::Close::new(types::Fixed(index))
            .build()
            .user_data(FIXED_CLOSE_TOKEN);
        if self.skip_success_ok {
            sqe = sqe.flags(squeue::Flags::SKIP_SUCCESS);
        }
        self.push(sqe);
    }

    /// [`close_fixed`](Driver::close_fixed), submitted at once with whatever else the SQ
    /// holds (one `io_uring_enter(2)`, the cost of the `close(2)` a regular fd pays): the
    /// socket is closed (its peer sees the FIN) when this returns, as for a regular fd,
    /// even if the calling task then blocks its core rather than yield to the loop.
    pub(crate) fn close_fixed_now(&mut self, index: u32) {
        self.close_fixed(index);
        self.submit_now();
    }

    /// Installs a regular fd for direct descriptor `index` (`IORING_OP_FIXED_FD_INSTALL`,
    /// Linux 6.8, synchronously; see [`Driver::run_sync`]): a new fd (`O_CLOEXEC`) for the
    /// same file, which stays in the table too.
    pub(crate) fn install_fixed(&mut self, index: u32) -> io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        let sqe = opcode::FixedFdInstall::new(types::Fixed(index), 0).build();
        // SAFETY: a FIXED_FD_INSTALL points at no memory.
        let res = unsafe { self.run_sync(sqe) };
        if res < 0 {
            return Err(io::Error::from_raw_os_error(-res));
        }
        // SAFETY: a successful install's result is a new fd that nothing else owns.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(res) })
    }

    /// Sets socket option `level`/`name` to `value` on direct descriptor `index` without a
    /// regular fd: `IORING_OP_URING_CMD` with `SOCKET_URING_OP_SETSOCKOPT` (Linux 6.7),
    /// synchronously (see [`Driver::run_sync`]). A kernel without socket commands gives
    /// `EOPNOTSUPP` (or `EINVAL` before 6.0's `URING_CMD`).
    pub(crate) fn setsockopt_fixed(
        &mut self,
        index: u32,
        level: i32,
        name: i32,
        value: &[u8],
    ) -> io::Result<()> {
        /// `SOCKET_URING_OP_SETSOCKOPT` (include/uapi/linux/io_uring.h).
        const SOCKET_URING_OP_SETSOCKOPT: u32 = 3;
        let optlen = u32::try_from(value.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "socket option value too long")
        })?;
        // `level` and `optname` share the SQE's `addr` field (level first in memory);
        // `optval` is `addr3`, the first 8 bytes of the command area; `optlen` shares
        // bytes 44..48 with `file_index`.
        let mut level_name = [0u8; 8];
        level_name[..4].copy_from_slice(&level.to_ne_bytes());
        level_name[4..].copy_from_slice(&name.to_ne_bytes());
        // The kernel reads the value from a heap copy that is leaked, never freed, should
        // the wait for the op's CQE unwind (a fatal ring error) before the CQE came.
        let value = LeakOnUnwind(Some(Box::<[u8]>::from(value)));
        let ptr = value.0.as_deref().map_or(std::ptr::null(), <[u8]>::as_ptr);
        let mut cmd = [0u8; 16];
        cmd[..8].copy_from_slice(&(ptr as u64).to_ne_bytes());
        let sqe = opcode::UringCmd16::new(types::Fixed(index), SOCKET_URING_OP_SETSOCKOPT)
            .addr(Some(u64::from_ne_bytes(level_name)))
            .cmd(cmd)
            .build();
        let sqe = op::sqe_with_optlen(sqe, optlen);
        // SAFETY: the SQE points only at `value`'s heap copy, which lives until this call
        // returns, after the op's CQE (or is leaked if the wait unwinds).
        let res = unsafe { self.run_sync(sqe) };
        drop(value);
        if res < 0 {
            return Err(io::Error::from_raw_os_error(-res));
        }
        Ok(())
    }
}

/// Memory an SQE points at, freed when dropped normally but leaked when dropped by an
/// unwinding panic (the kernel may still read it).
struct LeakOnUnwind(Option<Box<[u8]>>);

impl Drop for LeakOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::mem::forget(self.0.take());
        }
    }
}
