//! Small fixed-size bit sets: [`Cells`] of a state's components, and the reduction's
//! sets of steps, indexed by a step's place in the model's alphabet.

use std::ops::{BitAnd, BitOr, Not};

/// A set of state components, by number (below 128).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cells(u128);

impl Cells {
    /// No component.
    pub const NONE: Cells = Cells(0);

    /// The most components a model may name.
    pub const CAPACITY: usize = 128;

    /// The one component `cell`.
    pub const fn one(cell: usize) -> Cells {
        assert!(cell < Self::CAPACITY, "a component number is below 128");
        Cells(1 << cell)
    }

    /// The components `first..first + count`.
    pub const fn range(first: usize, count: usize) -> Cells {
        let mut cells = Cells::NONE;
        let mut c = first;
        while c < first + count {
            cells = cells.union(Cells::one(c));
            c += 1;
        }
        cells
    }

    /// Both sets.
    pub const fn union(self, other: Cells) -> Cells {
        Cells(self.0 | other.0)
    }

    /// Whether the sets share a component.
    pub const fn meets(self, other: Cells) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether `cell` is in the set.
    pub const fn contains(self, cell: usize) -> bool {
        cell < Self::CAPACITY && self.0 & (1 << cell) != 0
    }

    /// The components, ascending.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            let c = rest.trailing_zeros() as usize;
            (rest != 0).then(|| {
                rest &= rest - 1;
                c
            })
        })
    }
}

impl BitOr for Cells {
    type Output = Cells;
    fn bitor(self, other: Cells) -> Cells {
        self.union(other)
    }
}

/// A set of steps by alphabet index (below [`Steps::CAPACITY`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Steps([u64; 4]);

impl Steps {
    /// The most steps a set holds.
    pub(super) const CAPACITY: usize = 256;
    pub(super) const EMPTY: Steps = Steps([0; 4]);

    pub(super) fn with(mut self, step: usize) -> Steps {
        self.insert(step);
        self
    }

    pub(super) fn insert(&mut self, step: usize) {
        self.0[step / 64] |= 1 << (step % 64);
    }

    pub(super) fn contains(self, step: usize) -> bool {
        step < Self::CAPACITY && self.0[step / 64] & (1 << (step % 64)) != 0
    }

    pub(super) fn len(self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// The steps, ascending.
    pub(super) fn iter(self) -> impl Iterator<Item = usize> {
        let (mut word, mut rest) = (0, self.0[0]);
        std::iter::from_fn(move || loop {
            if rest != 0 {
                let i = word * 64 + rest.trailing_zeros() as usize;
                rest &= rest - 1;
                return Some(i);
            }
            word += 1;
            rest = *self.0.get(word)?;
        })
    }
}

impl BitOr for Steps {
    type Output = Steps;
    fn bitor(self, o: Steps) -> Steps {
        Steps(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
}

impl BitAnd for Steps {
    type Output = Steps;
    fn bitand(self, o: Steps) -> Steps {
        Steps(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
}

impl Not for Steps {
    type Output = Steps;
    fn not(self) -> Steps {
        Steps(self.0.map(|w| !w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_what_was_put_in() {
        let s = Steps::EMPTY.with(3).with(70).with(255);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 70, 255]);
        assert_eq!(s.len(), 3);
        assert_eq!((s & !Steps::EMPTY.with(70)).iter().count(), 2);
        let c = Cells::range(2, 3) | Cells::one(127);
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![2, 3, 4, 127]);
        assert!(c.meets(Cells::one(4)) && !c.meets(Cells::one(5)));
    }
}
