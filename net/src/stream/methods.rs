//! The owned-buffer and chunk methods, written once for the stream and for its owned half
//! of each direction: `read_methods!()` in `impl<F: Family>` blocks of `StreamSocket<F>`
//! and `OwnedReadHalf<F>`, `write_methods!()` in those of `StreamSocket<F>` and
//! `OwnedWriteHalf<F>`, `addr_methods!()` in all four types'. Each expects the fields the
//! stream has: `fd: SharedFd` (or `&SharedFd`, for the addresses), `read: ReadState`,
//! `write: WriteState`.
//!
//! Every method forwards to `io::ordered` (the owned-buffer calls, ordered with the
//! buffered state: one reader and one writer per direction) or to the buffered state
//! itself (`read_chunk`, `write_chunk`).

/// The read methods: `read_chunk`, `read_owned`, `read_buf_owned`, `read_exact_owned`,
/// `readv_owned`.
macro_rules! read_methods {
    () => {
        /// The next chunk of received bytes, in a provided buffer of the core's shared
        /// ring: no buffer of this connection's is pinned while it waits (an idle
        /// connection owns none). Empty at end of stream. The chunk goes back to the ring
        /// when dropped; it is an `IoBuf`, so `write_chunk(chunk)` or
        /// `write_all_owned(chunk)` sends it on without a copy.
        ///
        /// This reads from the same buffered state as the poll traits (`AsyncRead`,
        /// `AsyncBufRead`): bytes they buffered come first.
        /// [`read_owned`](Self::read_owned) reads the same bytes, in order; on a socket
        /// with nothing buffered and no receive armed it pins the caller's buffer in the
        /// kernel until data arrives.
        pub fn read_chunk(
            &mut self,
        ) -> impl ::std::future::Future<Output = ::std::io::Result<crate::Chunk>> + '_ {
            crate::io::read_chunk(&self.fd, &mut self.read)
        }

        /// Reads once into `buf` (up to its total length, from its start) and gives it
        /// back with the count (one `IORING_OP_RECV`); `Ok(0)` is end of stream. A
        /// zero-length buffer gives `Ok(0)` at once.
        ///
        /// A `Vec` is filled from index 0 up to its capacity, whatever its length (the
        /// owned-buffer convention of tokio-uring and monoio): its length becomes at least
        /// the count. To append after what a `Vec` holds, as tokio's `read_buf` does, use
        /// [`read_buf_owned`](Self::read_buf_owned). Bytes the buffered path holds come
        /// first (see [Mixing the APIs](crate::stream::StreamSocket#mixing-the-apis)).
        pub async fn read_owned<B: runtime::buf::IoBufMut>(
            &self,
            buf: B,
        ) -> (::std::io::Result<usize>, B) {
            crate::io::ordered::read(&self.fd, &self.read, buf).await
        }

        /// Reads once into `buf`'s spare capacity, appending after its length (tokio's
        /// `read_buf`): a `Vec` can be reused without `clear()`, and what it held stays.
        /// With no spare capacity, 8 KiB are reserved first. `Ok(0)` is end of stream.
        pub async fn read_buf_owned(&self, buf: Vec<u8>) -> (::std::io::Result<usize>, Vec<u8>) {
            crate::io::ordered::read_buf(&self.fd, &self.read, buf).await
        }

        /// Reads until `buf` is full (its total length: a `Vec`'s capacity);
        /// `UnexpectedEof` if the stream ends first.
        pub async fn read_exact_owned<B: runtime::buf::IoBufMut>(
            &self,
            buf: B,
        ) -> (::std::io::Result<()>, B) {
            crate::io::ordered::read_exact(&self.fd, &self.read, buf).await
        }

        /// Reads once into `bufs` in order (one `IORING_OP_READV`), each up to its total
        /// length, and gives them back with the total count; `Ok(0)` is end of stream.
        /// Empty buffers give `Ok(0)` at once. Bytes the buffered path holds come first,
        /// spread over the buffers.
        pub async fn readv_owned<B: runtime::buf::IoBufMut>(
            &self,
            bufs: Vec<B>,
        ) -> (::std::io::Result<usize>, Vec<B>) {
            let fd = &self.fd;
            crate::io::ordered::readv(fd, &self.read, bufs, |b| {
                crate::ops::readv_at(fd, b, u64::MAX)
            })
            .await
        }
    };
}

/// The write methods: `write_chunk`, `write_owned`, `write_all_owned`, `write_all_from`,
/// `writev_owned`, `writev_all_owned`, `shutdown_socket`.
macro_rules! write_methods {
    () => {
        /// Sends `chunk` after the bytes already written through the poll traits
        /// (`AsyncWrite`) or an earlier `write_chunk`, without copying it, and returns as
        /// soon as its send is started (write-behind, as `poll_write` does): it waits only
        /// for the send before it. The chunk goes back to its ring as soon as it is sent,
        /// with no task woken for that, and is sent even if the socket is dropped first.
        /// That send's error, if any, is reported by the next `write_chunk`, poll-trait
        /// write, flush or close.
        ///
        /// An echo that answers with what it read copies nothing and wakes its task once
        /// per message: `let c = s.read_chunk().await?; s.write_chunk(c).await?;`. The
        /// owned-buffer [`write_all_owned`](Self::write_all_owned) waits for the sends
        /// before it, then for its own.
        pub fn write_chunk(
            &mut self,
            chunk: crate::Chunk,
        ) -> impl ::std::future::Future<Output = ::std::io::Result<()>> + '_ {
            crate::io::write_chunk(&self.fd, &mut self.write, chunk)
        }

        /// Writes `buf`'s initialised bytes once (one `IORING_OP_SEND`) and gives it back
        /// with the count, which may be short. An empty buffer gives `Ok(0)` at once.
        pub async fn write_owned<B: runtime::buf::IoBuf>(
            &self,
            buf: B,
        ) -> (::std::io::Result<usize>, B) {
            let fd = &self.fd;
            crate::io::ordered::after_drain(fd, &self.write, buf, |b| crate::io::write(fd, b)).await
        }

        /// Writes all of `buf`'s initialised bytes and gives it back. A send that stops
        /// short fails with the socket's own error, its kind kept (`ConnectionReset`,
        /// `BrokenPipe`).
        pub async fn write_all_owned<B: runtime::buf::IoBuf>(
            &self,
            buf: B,
        ) -> (::std::io::Result<()>, B) {
            let fd = &self.fd;
            crate::io::ordered::after_drain(fd, &self.write, buf, |b| crate::io::write_all(fd, b))
                .await
        }

        /// Writes all of the borrowed `data` (`write_all_owned(&data[..])` does not
        /// compile: an op must own its buffer, since the kernel may read it after a dropped
        /// future is gone).
        ///
        /// Cost: `data` is copied into a `Vec` the op owns, one allocation and one copy per
        /// call; pass an owned buffer to [`write_all_owned`](Self::write_all_owned) to
        /// avoid both. Empty `data` gives `Ok(())` at once.
        pub async fn write_all_from(&self, data: &[u8]) -> ::std::io::Result<()> {
            crate::io::ordered::drain(&self.fd, &self.write).await?;
            crate::io::write_all_from(&self.fd, data).await
        }

        /// Writes the initialised bytes of `bufs` in order, once (one `IORING_OP_SENDMSG`
        /// with `MSG_NOSIGNAL`, so a reset peer is `EPIPE`, never `SIGPIPE`; the count may
        /// be short). Empty buffers give `Ok(0)` at once; more than `IOV_MAX` (1024)
        /// buffers is `EMSGSIZE`.
        pub async fn writev_owned<B: runtime::buf::IoBuf>(
            &self,
            bufs: Vec<B>,
        ) -> (::std::io::Result<usize>, Vec<B>) {
            let fd = &self.fd;
            crate::io::ordered::after_drain(fd, &self.write, bufs, |b| crate::io::writev(fd, b))
                .await
        }

        /// Writes all the initialised bytes of `bufs`, in order, and gives them back.
        ///
        /// One vectored send (as [`writev_owned`](Self::writev_owned)) when the socket
        /// takes it all, the common case; after a short one, the rest is sent buffer by
        /// buffer. `WriteZero` if the socket takes nothing; more than `IOV_MAX` (1024)
        /// buffers is `EMSGSIZE`.
        pub async fn writev_all_owned<B: runtime::buf::IoBuf>(
            &self,
            bufs: Vec<B>,
        ) -> (::std::io::Result<()>, Vec<B>) {
            let fd = &self.fd;
            crate::io::ordered::after_drain(fd, &self.write, bufs, |b| crate::io::writev_all(fd, b))
                .await
        }

        /// Shuts down the read direction, the write direction (the peer reads end of
        /// stream after the bytes sent so far) or both (one `IORING_OP_SHUTDOWN`). Bytes
        /// already written through the poll traits or `write_chunk` are sent first.
        pub async fn shutdown_socket(&self, how: ::std::net::Shutdown) -> ::std::io::Result<()> {
            if how != ::std::net::Shutdown::Read {
                // The bytes already accepted go first.
                crate::io::ordered::drain(&self.fd, &self.write).await?;
            }
            crate::ops::shutdown(&self.fd, how).await
        }
    };
}

/// The address getters: `peer_addr`, `local_addr` (of the family's address type).
macro_rules! addr_methods {
    () => {
        /// The connected peer's address (`getpeername(2)`): for a Unix client, the
        /// listener's path. On a direct descriptor, installs a regular fd on first use
        /// (see [Direct descriptors](crate::TcpStream#direct-descriptors)).
        pub fn peer_addr(&self) -> ::std::io::Result<F::Addr> {
            <F as crate::stream::family::sealed::Sealed>::peer_addr(&self.fd)
        }

        /// The socket's own address (`getsockname(2)`): unnamed for a Unix socket that was
        /// not bound. On a direct descriptor, installs a regular fd on first use.
        pub fn local_addr(&self) -> ::std::io::Result<F::Addr> {
            <F as crate::stream::family::sealed::Sealed>::local_addr(&self.fd)
        }
    };
}

pub(super) use {addr_methods, read_methods, write_methods};
