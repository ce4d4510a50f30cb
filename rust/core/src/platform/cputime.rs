//! CPU time of the calling thread and of the whole process, and the resolution of their clock.
//!
//! Wall time counts whatever else the machine does meanwhile (other jobs, other threads of a
//! crowded pool); CPU time counts only the instructions run for the measured work, so it is what
//! the benchmark compares. Both are recorded.

/// Seconds of CPU time consumed so far by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
/// NaN where the platform has no such clock.
pub fn thread_cpu_seconds() -> f64 {
    read(Clock::Thread)
}

/// Seconds of CPU time consumed so far by every thread of this process
/// (`CLOCK_PROCESS_CPUTIME_ID`): for work that may fan out over worker threads (an OPPS-DS search).
pub fn process_cpu_seconds() -> f64 {
    read(Clock::Process)
}

/// The resolution of the thread CPU clock, in seconds, as the system reports it. Times below it
/// are not measurements.
pub fn cpu_clock_resolution_seconds() -> f64 {
    resolution(Clock::Thread)
}

#[derive(Clone, Copy)]
enum Clock {
    Thread,
    Process,
}

#[cfg(unix)]
fn clock_id(clock: Clock) -> libc::clockid_t {
    match clock {
        Clock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        Clock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
    }
}

#[cfg(unix)]
fn read(clock: Clock) -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the clock id is one of the two POSIX CPU clocks.
    let status = unsafe { libc::clock_gettime(clock_id(clock), &mut now) };
    if status != 0 {
        return f64::NAN;
    }
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

#[cfg(unix)]
fn resolution(clock: Clock) -> f64 {
    let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as in `read`.
    let status = unsafe { libc::clock_getres(clock_id(clock), &mut res) };
    if status != 0 {
        return f64::NAN;
    }
    res.tv_sec as f64 + res.tv_nsec as f64 * 1e-9
}

#[cfg(not(unix))]
fn read(_clock: Clock) -> f64 {
    f64::NAN
}

#[cfg(not(unix))]
fn resolution(_clock: Clock) -> f64 {
    f64::NAN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(seconds: f64) -> u64 {
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed().as_secs_f64() < seconds {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        x
    }

    #[test]
    fn thread_cpu_time_counts_work_and_not_sleep() {
        let t0 = thread_cpu_seconds();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let slept = thread_cpu_seconds() - t0;
        let t1 = thread_cpu_seconds();
        spin(0.05);
        let worked = thread_cpu_seconds() - t1;
        // Sleeping costs (almost) no CPU: far below the 200 ms slept; 50 ms of spinning costs
        // at most 50 ms of this thread's CPU, and at least some of it even on a crowded machine.
        assert!(slept < 0.02, "{slept}");
        assert!(worked > 0.0 && worked <= 0.06, "{worked}");
        assert!(process_cpu_seconds() >= worked);
    }

    #[test]
    fn the_resolution_is_a_small_positive_duration() {
        let r = cpu_clock_resolution_seconds();
        assert!(r > 0.0 && r <= 0.01, "{r}");
    }
}
