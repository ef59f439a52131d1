//! Counts per day over a sliding window of days: how the learned examples count an operation's
//! runs this week, and the insights a question's askings over their window. Days are whole days
//! since the Unix epoch ([`today`]), so replicas of a fleet agree on them and their counts add
//! up day by day in Redis.
//!
//! A clock that goes back never loses counts: a count on an earlier day than the last one
//! counted goes to the last one.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Days since the Unix epoch, now.
pub(crate) fn today() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400)
}

/// Counts for the days of a window ending on the last day counted: `days[day % window]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DayCounts {
    days: Box<[u64]>,
    /// The last day counted.
    day: u64,
}

impl DayCounts {
    /// Nothing counted yet, over `window` days (at least one).
    pub(crate) fn new(window: usize, today: u64) -> Self {
        DayCounts {
            days: vec![0; window.max(1)].into_boxed_slice(),
            day: today,
        }
    }

    /// The window's length in days (as read from a file: a caller checks it is its own).
    pub(crate) fn window(&self) -> usize {
        self.days.len()
    }

    /// The last day counted.
    pub(crate) fn day(&self) -> u64 {
        self.day
    }

    /// The counts of the window ending on `today`.
    pub(crate) fn total(&self, today: u64) -> u64 {
        let window = self.days.len() as u64;
        if window == 0 || today >= self.day.saturating_add(window) {
            return 0;
        }
        let today = today.max(self.day);
        let first = (today + 1).saturating_sub(window);
        (first..=self.day)
            .map(|day| self.days[(day % window) as usize])
            .sum()
    }

    /// Counts `n` on `today`.
    pub(crate) fn add(&mut self, today: u64, n: u64) {
        let window = self.days.len() as u64;
        if window == 0 {
            return;
        }
        let today = today.max(self.day);
        // The days between the last one counted and today start again from 0.
        for day in self.day.saturating_add(1)..=today.min(self.day.saturating_add(window)) {
            self.days[(day % window) as usize] = 0;
        }
        self.day = today;
        self.days[(today % window) as usize] += n;
    }

    /// Takes `counts` (day, count) for the window ending on `today` in place of its own (the
    /// fleet's, read from Redis); days outside the window are left out. Whether that changed
    /// anything.
    pub(crate) fn set(&mut self, counts: impl IntoIterator<Item = (u64, u64)>, today: u64) -> bool {
        let window = self.days.len() as u64;
        let before = self.clone();
        self.days.fill(0);
        self.day = today;
        let first = (today + 1).saturating_sub(window);
        for (day, count) in counts {
            if (first..=today).contains(&day) {
                self.days[(day % window) as usize] += count;
            }
        }
        before != *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_slide_with_the_days() {
        let mut counts = DayCounts::new(7, 100);
        counts.add(100, 1);
        counts.add(100, 1);
        counts.add(103, 1);
        assert_eq!(counts.total(103), 3);
        assert_eq!(counts.total(106), 3);
        assert_eq!(counts.total(107), 1);
        counts.add(115, 1);
        assert_eq!(counts.total(115), 1);
        // A clock that went back counts on the last day counted.
        counts.add(110, 2);
        assert_eq!((counts.day(), counts.total(115)), (115, 3));
    }

    #[test]
    fn set_takes_the_days_of_the_window_only() {
        let mut counts = DayCounts::new(3, 10);
        counts.add(10, 5);
        assert!(counts.set([(8, 1), (9, 2), (10, 4), (7, 100), (11, 100)], 10));
        assert_eq!(counts.total(10), 7);
        assert_eq!(counts.total(11), 6);
        assert!(!counts.set([(8, 1), (9, 2), (10, 4)], 10));
    }
}
