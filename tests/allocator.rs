//! The allocator settings a crawl that writes an index makes (`crawltop::allocator`), observed
//! through glibc's own accounting. In a file of its own: the test runs alone in its process, so
//! no other test's allocations move the figures it reads.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_mebibyte_block_freed_and_taken_again_is_mapped_on_its_own() {
    use crawltop::allocator::{Tuned, tune};
    use std::hint::black_box;

    // glibc's count of bytes in blocks mapped on their own (given back when freed).
    fn mapped() -> usize {
        // SAFETY: mallinfo2 takes nothing and returns a plain struct of counters.
        #[allow(unsafe_code)]
        unsafe { libc::mallinfo2() }.hblkhd
    }

    match tune() {
        Tuned::Set => {}
        other => panic!(
            "the allocator was not tuned ({other:?}); unset GLIBC_TUNABLES, MALLOC_ARENA_MAX and \
             MALLOC_MMAP_THRESHOLD_ to run this test"
        ),
    }
    // What tantivy's indexing arena does at every commit: 1 MiB blocks freed, then taken again.
    let first = black_box(vec![1u8; 1 << 20]);
    drop(first);
    let before = mapped();
    let second = black_box(vec![2u8; 1 << 20]);
    let during = mapped();
    assert!(
        during >= before + (1 << 20),
        "the second block came from a heap: {before} -> {during} bytes mapped on their own"
    );
    drop(second);
    assert!(mapped() < during, "freeing the block gave it back");
}
