//! How many threads a parallel call uses: one rule for every evaluator. `None` runs on rayon's
//! global pool (every core); `Some(n)` on a pool made for the call of `n` threads, or of one
//! thread per work item when there are fewer items than that (a thread with no item would only be
//! started and joined: `--threads 2000` on four MDPs starts four). Results never depend on it:
//! every parallel loop of the core gives item `i` its own stream. The Python package applies the
//! same cap before it calls in, and warns about counts above the cores (`bbrl/threads.py`).

use crate::error::Result;
use crate::invalid;

/// The threads a pool for `items` work items gets when `n` are asked for: `min(n, items)`, at least 1.
pub fn pool_size(n: usize, items: usize) -> usize {
    n.min(items).max(1)
}

/// Runs `work`, a parallel loop over `items` work items, on `threads` threads (see the module
/// docs); 0 threads is an error.
pub fn install<T: Send>(threads: Option<usize>, items: usize, work: impl FnOnce() -> T + Send) -> Result<T> {
    match threads {
        None => Ok(work()),
        Some(0) => Err(invalid!("threads must be >= 1 (or None for every core), got 0")),
        Some(n) => {
            let n = pool_size(n, items);
            Ok(rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                // Named, so that `top -H` and /proc show whose threads they are.
                .thread_name(|i| format!("bbrl-worker-{i}"))
                .build()
                .map_err(|e| invalid!("cannot start {n} worker threads: {e}"))?
                .install(work))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_the_threads_asked_for_and_refuses_zero() {
        assert_eq!(install(Some(3), 10, rayon::current_num_threads).unwrap(), 3);
        assert_eq!(install(None, 10, || 7).unwrap(), 7);
        assert!(install(Some(0), 10, || ()).unwrap_err().to_string().contains("threads must be >= 1"));
    }

    #[test]
    fn starts_no_more_threads_than_work_items() {
        assert_eq!(install(Some(2000), 4, rayon::current_num_threads).unwrap(), 4);
        assert_eq!(install(Some(2), 4, rayon::current_num_threads).unwrap(), 2);
        // No item at all still gets one thread (the loop is empty).
        assert_eq!(install(Some(8), 0, rayon::current_num_threads).unwrap(), 1);
        assert_eq!((pool_size(2000, 4), pool_size(3, 4), pool_size(5, 0)), (4, 3, 1));
    }
}
