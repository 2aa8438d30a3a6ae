//! Bytes a stream write reported written reach the file even when the runtime ends right
//! after: shutdown lets the write-behind finish before it cancels anything else.

mod common;

use common::{pattern, TempDir};
use futures::io::AsyncWriteExt;

#[test]
fn a_write_behind_finishes_when_the_runtime_ends_right_after() {
    let dir = TempDir::new("shutdown-write-behind");
    let path = dir.join("f");
    let data = pattern(4 << 20, 8);
    for round in 0..20 {
        let rt = runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let mut f = corering_fs::File::create(&path).await.unwrap();
            f.write_all(&data).await.unwrap();
            // No flush: the last write is still in flight when block_on returns.
        });
        drop(rt);
        let got = std::fs::read(&path).unwrap();
        assert!(
            got == data,
            "round {round}: {} of {} bytes reached the file",
            got.len(),
            data.len()
        );
    }
}
