//! The one typed error: a command that wants a particular exit status.

use std::fmt;

#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    /// Printed on stderr by `main`, when set.
    pub message: Option<String>,
}

impl Exit {
    pub fn code(code: u8) -> Self {
        Exit {
            code,
            message: None,
        }
    }

    pub fn with_message(code: u8, message: impl Into<String>) -> Self {
        Exit {
            code,
            message: Some(message.into()),
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(m) => write!(f, "{m}"),
            None => write!(f, "exit status {}", self.code),
        }
    }
}

impl std::error::Error for Exit {}
