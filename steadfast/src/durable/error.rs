//! Errors of the action state store ([`super::store`]) and of its record format
//! ([`super::record`]), below both so that the format does not depend on the store.

use super::log::{Offset, Partition};
use super::{Epoch, StateKey};

/// Errors of the store.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A state could not be encoded.
    #[error("cannot encode state {key:?}: {reason}")]
    Encode {
        /// State being written.
        key: StateKey,
        /// Encoder message.
        reason: String,
    },
    /// A record read back is not a valid action state record.
    #[error("undecodable record at partition {partition} offset {offset}: {reason}")]
    Decode {
        /// Partition of the record.
        partition: Partition,
        /// Offset of the record.
        offset: Offset,
        /// Decoder message.
        reason: String,
    },
    /// A recovery marker does not fit the log.
    #[error("invalid recovery marker: {0}")]
    InvalidMarker(String),
    /// A rebuild was handed a record out of order, from a partition the log does not
    /// have, or past the end it was told of.
    #[error("rebuild: {0}")]
    Replay(String),
    /// A record written by an incarnation later than the one restoring: another
    /// incarnation took over since, or the epochs were mixed up. Never skipped.
    #[error(
        "record at partition {partition} offset {offset} has epoch {epoch}, above the \
         restoring incarnation's epoch {restoring}"
    )]
    FutureEpoch {
        /// Partition of the record.
        partition: Partition,
        /// Offset of the record.
        offset: Offset,
        /// Epoch the record carries.
        epoch: Epoch,
        /// Epoch of the restoring incarnation.
        restoring: Epoch,
    },
}
