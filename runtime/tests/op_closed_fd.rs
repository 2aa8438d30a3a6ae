//! An op on an fd that was open and is now closed gives `EBADF`. Alone in its binary: in a
//! binary with other tests, another thread's new fd could reuse the closed number.

mod common;

use std::os::fd::AsRawFd;

#[test]
fn closed_fd_is_ebadf() {
    let rt = runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (r, w) = common::pipe();
        let raw = r.as_raw_fd();
        drop(r);
        drop(w);
        let (res, _) = runtime::read(raw, vec![0u8; 8], u64::MAX).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
        let (res, _) = runtime::write(raw, b"x".as_slice(), u64::MAX).await;
        assert_eq!(res.unwrap_err().raw_os_error(), Some(libc::EBADF));
    });
}
