//! Lateness (an attempt's start minus when it was due) kept as counts in
//! fixed, log-spaced buckets, and the p99 read back from them.
//!
//! Why buckets: the overview charts a p99 per minute (and per ten
//! minutes over a day), per endpoint and for the whole deployment, from
//! rows that several hookd processes add to at once. Fixed buckets merge by
//! adding, so a row is an additive upsert (never read, merged and written
//! back), and a step of ten minutes, or of a thousand endpoints, is the sum
//! of its rows. Exact percentiles would need every value; mergeable
//! sketches with moving bounds (t-digest) cannot be added column by column
//! in SQL.
//!
//! Why these buckets: two per doubling from 1 ms (bounds 1, 1.41, 2, 2.83,
//! 4 … ms) up to 2^22 ms (70 minutes), one below 1 ms and one above 70
//! minutes: 46 in all. The p99 is the upper bound of the bucket the 99th
//! percentile falls in, capped by the largest lateness seen (kept exactly
//! beside the counts), so it is never below the true p99 and at most 41 %
//! above it; past 70 minutes it is that largest value.

/// How many buckets: one below 1 ms, 44 half-doublings up to 2^22 ms, one
/// above.
pub const BUCKETS: usize = 46;

/// Counts per bucket, in bucket order.
pub type Histogram = [i64; BUCKETS];

/// The bucket's exclusive upper bound in microseconds; `None` for the last,
/// which has none. Bucket 0 ends at 1 ms, bucket k at 1 ms × 2^(k/2).
pub fn upper_bound_us(bucket: usize) -> Option<f64> {
    (bucket < BUCKETS - 1).then(|| 1000.0 * 2f64.powf(bucket as f64 / 2.0))
}

/// The bucket of a lateness in microseconds (a negative one, an attempt a
/// little before its due time, counts as none).
pub fn bucket_of(lateness_us: i64) -> usize {
    let us = lateness_us.max(0) as f64;
    (0..BUCKETS - 1)
        .find(|&b| us < upper_bound_us(b).expect("every bucket but the last has a bound"))
        .unwrap_or(BUCKETS - 1)
}

/// A lateness in whole milliseconds, rounded up, as the largest is kept:
/// rounding up keeps the p99 at or above the truth.
pub fn ceil_ms(lateness_us: i64) -> i64 {
    (lateness_us.max(0) + 999) / 1000
}

/// The p99 in milliseconds of the lateness counted in `counts`, whose
/// largest value was `max_ms`; `None` when nothing was counted. The
/// 99th percentile is the value of rank ⌈0.99 n⌉; the answer is the upper
/// bound of its bucket, rounded up to a millisecond, or `max_ms` when that
/// is smaller (always, in the last bucket).
pub fn p99_ms(counts: &Histogram, max_ms: i64) -> Option<i64> {
    let n: i64 = counts.iter().sum();
    if n <= 0 {
        return None;
    }
    // ⌈0.99 n⌉ in integers: (99 n + 99) / 100.
    let rank = (99 * n + 99) / 100;
    let mut seen = 0;
    for (bucket, count) in counts.iter().enumerate() {
        seen += count;
        if seen >= rank {
            let bound = upper_bound_us(bucket).map(|us| (us / 1000.0).ceil() as i64);
            return Some(bound.map_or(max_ms, |bound| bound.min(max_ms)));
        }
    }
    Some(max_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values_us: &[i64]) -> (Histogram, i64) {
        let mut counts = [0; BUCKETS];
        let mut max = 0;
        for &v in values_us {
            counts[bucket_of(v)] += 1;
            max = max.max(ceil_ms(v));
        }
        (counts, max)
    }

    #[test]
    fn buckets_are_half_doublings_from_one_millisecond() {
        assert_eq!(bucket_of(-5_000), 0);
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(999), 0);
        assert_eq!(bucket_of(1_000), 1);
        assert_eq!(bucket_of(1_414), 1);
        assert_eq!(bucket_of(1_415), 2);
        assert_eq!(bucket_of(2_000), 3);
        assert_eq!(bucket_of(4_000), 5);
        assert_eq!(bucket_of(1_000 * (1 << 21)), 43);
        assert_eq!(bucket_of(1_000 * (1 << 22) - 1), 44);
        assert_eq!(bucket_of(1_000 * (1 << 22)), 45);
        assert_eq!(bucket_of(i64::MAX), 45);
        // Every value lies below its bucket's bound and at or above the
        // bound of the bucket before.
        for us in [
            1,
            999,
            1_000,
            1_500,
            7_777,
            123_456,
            9_999_999,
            4_000_000_000,
        ] {
            let b = bucket_of(us);
            if let Some(upper) = upper_bound_us(b) {
                assert!((us as f64) < upper, "{us} in {b}");
            }
            if b > 0 {
                assert!(us as f64 >= upper_bound_us(b - 1).unwrap(), "{us} in {b}");
            }
        }
    }

    #[test]
    fn nothing_counted_has_no_p99() {
        assert_eq!(p99_ms(&[0; BUCKETS], 0), None);
    }

    #[test]
    fn the_p99_is_never_below_the_true_one_and_at_most_41_percent_above() {
        // 1,000 values from 1 ms to 100 s, spread over the buckets: the
        // true p99 is the 990th smallest.
        let values: Vec<i64> = (1..=1000).map(|i| i * i * 100).collect();
        let (counts, max) = with(&values);
        let truth = values[989];
        let p99 = p99_ms(&counts, max).unwrap();
        assert!(p99 * 1000 >= truth, "{p99} ms below {truth} µs");
        assert!(
            (p99 * 1000) as f64 <= truth as f64 * 1.415 + 1000.0,
            "{p99} ms, {truth} µs"
        );
    }

    #[test]
    fn the_p99_is_capped_by_the_largest_lateness() {
        // All at 5 ms: bucket [4, 5.66) ms, whose bound (6 ms rounded up)
        // is above what was seen.
        let (counts, max) = with(&[5_000; 10]);
        assert_eq!(p99_ms(&counts, max), Some(5));
    }

    #[test]
    fn one_slow_attempt_in_a_hundred_is_not_the_p99_but_two_are() {
        let mut values = vec![2_000; 99];
        values.push(60_000_000);
        let (counts, max) = with(&values);
        assert_eq!(
            p99_ms(&counts, max),
            Some(3),
            "rank 99 of 100 is a fast one"
        );
        values[0] = 60_000_000;
        let (counts, max) = with(&values);
        let p99 = p99_ms(&counts, max).unwrap();
        assert!((60_000..=84_853).contains(&p99), "{p99}");
    }

    #[test]
    fn past_seventy_minutes_the_p99_is_the_largest_lateness() {
        let (counts, max) = with(&[3 * 3_600_000_000; 5]);
        assert_eq!(p99_ms(&counts, max), Some(3 * 3_600_000));
    }

    #[test]
    fn histograms_merged_by_adding_give_the_p99_of_all_their_values() {
        let (a, max_a) = with(&[1_000; 50]);
        let (b, max_b) = with(&[30_000; 50]);
        let mut merged = a;
        for (m, c) in merged.iter_mut().zip(b) {
            *m += c;
        }
        let (all, max_all) = with(&[[1_000; 50], [30_000; 50]].concat());
        assert_eq!(merged, all);
        assert_eq!(p99_ms(&merged, max_a.max(max_b)), p99_ms(&all, max_all));
        assert_eq!(p99_ms(&merged, max_a.max(max_b)), Some(30));
    }
}
