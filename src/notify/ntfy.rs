//! Replies on the run's ntfy topic: read back only with the user's access
//! token (`RALPH_NOTIFY_NTFY_TOKEN`), never from an open topic, which
//! anyone who guesses its name can write to. The token also goes with the
//! notices posted there.

use std::time::Duration;

use serde::Deserialize;

/// The variable that holds the topic's access token: a secret, as the
/// topic's URL is, so never from the command line or the project.
pub const TOKEN_VAR: &str = "RALPH_NOTIFY_NTFY_TOKEN";

/// The most of one poll's answer read.
const READ_CAP: u64 = 1 << 20;
const TIMEOUT: Duration = Duration::from_secs(15);

/// The topic's access token, if the user gave one.
pub fn token() -> Option<String> {
    // Taken out of ralph's environment as it starts, as every secret is
    // (`secrets`): no session inherits it.
    crate::secrets::var(TOKEN_VAR)
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// A message on the topic.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Message {
    pub id: String,
    /// Seconds since the epoch.
    pub time: u64,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Message {
    /// Posted by ralph (its notices are tagged `ralph`).
    pub fn is_ralphs(&self) -> bool {
        self.tags.iter().any(|t| t == "ralph")
    }
}

/// The messages of a poll's answer (ntfy's JSON stream, one object a
/// line); keep-alives, opens and lines it cannot read are left out.
pub fn messages(text: &str) -> Vec<Message> {
    #[derive(Deserialize)]
    struct Line {
        event: String,
        #[serde(flatten)]
        message: serde_json::Value,
    }
    text.lines()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|l| l.event == "message")
        .filter_map(|l| serde_json::from_value(l.message).ok())
        .collect()
}

/// The topic's messages since `since` (seconds since the epoch, or the id
/// of the last message read: what came after it), read with `token`; the
/// error never shows the URL (the topic's name is a secret).
pub fn poll(url: &str, token: &str, since: &str) -> Result<Vec<Message>, String> {
    use std::io::Read;
    let agent = super::send::agent(TIMEOUT);
    let at = format!("{}/json?poll=1&since={since}", url.trim_end_matches('/'));
    let hide = |e: String| e.replace(url, &super::redact(url));
    let mut resp = agent
        .get(&at)
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .map_err(|e| hide(e.to_string()))?;
    let mut text = String::new();
    resp.body_mut()
        .as_reader()
        .take(READ_CAP)
        .read_to_string(&mut text)
        .map_err(|e| hide(e.to_string()))?;
    Ok(messages(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_messages_of_a_poll_are_read_and_ralphs_own_are_known() {
        let text = concat!(
            r#"{"id":"a","time":10,"event":"open","topic":"t"}"#,
            "\n",
            r#"{"id":"b","time":11,"event":"message","topic":"t","message":"proj: waiting","tags":["ralph","waiting"]}"#,
            "\n",
            "not json\n",
            r#"{"id":"c","time":12,"event":"message","topic":"t","message":"/ralph answer --option 2"}"#,
            "\n",
            r#"{"id":"d","time":13,"event":"keepalive","topic":"t"}"#,
            "\n",
        );
        let got = messages(text);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].is_ralphs());
        assert_eq!(
            (
                got[1].id.as_str(),
                got[1].message.as_str(),
                got[1].is_ralphs()
            ),
            ("c", "/ralph answer --option 2", false)
        );
    }
}
