//! Why a simulated run could not be completed, for both models.

/// Why a run could not be completed. A run that completes but breaks a promise is no
/// error: its outcome says so, and validation judges its log.
#[derive(Debug)]
pub enum RunError {
    /// The settings are out of range.
    Config(String),
    /// The log could not be written.
    Log(std::io::Error),
    /// Another file or the async runtime failed: what was being done, and the error.
    Io {
        /// What the run was doing.
        what: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A task waited for its turn more than the retry bound: a driver defect.
    Stalled(&'static str),
    /// A step of the run failed: the file log refused an operation, or the operator an
    /// event the simulation holds valid.
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Config(why) | RunError::Failed(why) => write!(f, "{why}"),
            RunError::Log(e) => write!(f, "writing the log: {e}"),
            RunError::Io { what, error } => write!(f, "{what}: {error}"),
            RunError::Stalled(what) => write!(f, "the run stalled: {what} never got its turn"),
        }
    }
}

impl std::error::Error for RunError {}
