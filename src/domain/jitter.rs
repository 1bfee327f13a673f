//! Schedule jitter: each wait of an endpoint's schedule scaled by a random
//! factor in [1 − j, 1 + j], so that notifications that failed together
//! (a receiver's outage) do not all come back at the same instant. `j` is
//! the endpoint's `schedule_jitter`, 0 by default: the schedule exact.

use std::time::Duration;

/// Largest `schedule_jitter`: a wait is never cut below half of itself.
pub const MAX_JITTER: f64 = 0.5;

/// An endpoint's jitter, within [0, `MAX_JITTER`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Jitter(f64);

impl Jitter {
    /// `None` for a value outside [0, `MAX_JITTER`] (NaN included).
    pub fn new(j: f64) -> Option<Self> {
        (0.0..=MAX_JITTER).contains(&j).then_some(Self(j))
    }

    /// A value as stored: one out of bounds (written by hand) is clamped,
    /// a NaN is none.
    pub fn stored(j: f64) -> Self {
        if j.is_nan() {
            Self(0.0)
        } else {
            Self(j.clamp(0.0, MAX_JITTER))
        }
    }

    pub fn value(self) -> f64 {
        self.0
    }

    /// The factor for a uniform `sample` in [0, 1]: 1 − j at 0, 1 + j at 1.
    pub fn factor(self, sample: f64) -> f64 {
        1.0 - self.0 + 2.0 * self.0 * sample.clamp(0.0, 1.0)
    }

    /// A factor drawn at random; exactly 1 for no jitter.
    pub fn draw(self) -> f64 {
        if self.0 == 0.0 {
            1.0
        } else {
            self.factor(rand::random::<f64>())
        }
    }
}

/// `wait` scaled by `factor`; unchanged for a factor of 1.
pub fn scaled(wait: Duration, factor: f64) -> Duration {
    if factor == 1.0 {
        wait
    } else {
        wait.mul_f64(factor.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_a_number_from_zero_to_one_half() {
        assert_eq!(Jitter::new(0.0), Some(Jitter(0.0)));
        assert_eq!(Jitter::new(0.5), Some(Jitter(0.5)));
        assert_eq!(Jitter::new(-0.1), None);
        assert_eq!(Jitter::new(0.6), None);
        assert_eq!(Jitter::new(f64::NAN), None);
        assert_eq!(Jitter::stored(0.9), Jitter(0.5));
        assert_eq!(Jitter::stored(f64::NAN), Jitter(0.0));
    }

    #[test]
    fn the_factor_spans_one_less_jitter_to_one_plus_jitter() {
        let j = Jitter::new(0.1).unwrap();
        assert!((j.factor(0.0) - 0.9).abs() < 1e-12);
        assert!((j.factor(0.5) - 1.0).abs() < 1e-12);
        assert!((j.factor(1.0) - 1.1).abs() < 1e-12);
        for _ in 0..1000 {
            let f = j.draw();
            assert!((0.9..=1.1).contains(&f), "{f}");
        }
    }

    #[test]
    fn no_jitter_keeps_every_wait_exact() {
        let none = Jitter::default();
        for _ in 0..100 {
            assert_eq!(none.draw(), 1.0);
        }
        let wait = Duration::from_millis(600_001);
        assert_eq!(scaled(wait, none.draw()), wait);
        assert_eq!(scaled(Duration::from_secs(2), 1.5), Duration::from_secs(3));
        assert_eq!(scaled(Duration::from_secs(2), 0.5), Duration::from_secs(1));
    }
}
