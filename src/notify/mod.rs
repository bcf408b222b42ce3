//! Telling people when a loop needs them: the channels (`[notify]`,
//! `--notify`), the one-line notice and what each channel is sent. Pure;
//! `send` does the I/O, off the loop's thread.

pub mod ntfy;
pub mod send;

use serde::{Deserialize, Serialize};

/// Where a notice goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// `notify-send` (Linux) or `osascript` (macOS), where present.
    Desktop,
    /// An ntfy topic URL: the line is POSTed as the body.
    Ntfy(String),
    /// A Slack-compatible incoming webhook: `{"text": ...}`.
    Slack(String),
    /// A Discord webhook: `{"content": ...}`.
    Discord(String),
    /// A shell command, with the notice in `RALPH_EVENT` and `RALPH_MESSAGE`.
    Command(String),
}

impl Channel {
    /// A `--notify` target: `desktop`, `command=CMD`, or an HTTP channel
    /// (`ntfy`, `slack`, `discord`) whose URL, a secret, never comes from
    /// the command line (every user of the machine sees a process's
    /// arguments): `KIND` takes it from `RALPH_NOTIFY_<KIND>`, else from the
    /// config's `[notify] KIND`; `KIND=env:VAR` from the variable `VAR`.
    /// `env` reads the environment; `config` is the config's value of a kind.
    pub fn parse(
        s: &str,
        env: &dyn Fn(&str) -> Option<String>,
        config: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Channel, String> {
        if s == "desktop" {
            return Ok(Channel::Desktop);
        }
        let bad = || {
            format!(
                "--notify {:?}: expected desktop, ntfy, slack, discord (their URL from RALPH_NOTIFY_NTFY, ... or [notify]), KIND=env:VAR or command=CMD",
                redact_text(s)
            )
        };
        let (kind, value) = match s.split_once('=') {
            Some(("command", cmd)) => return Channel::of("command", cmd)?.ok_or_else(bad),
            Some((kind, value)) => (kind, Some(value)),
            None => (s, None),
        };
        if !HTTP_KINDS.contains(&kind) {
            return Err(bad());
        }
        let var = format!("RALPH_NOTIFY_{}", kind.to_uppercase());
        let url = match value {
            None => env(&var).or_else(|| config(kind)).ok_or_else(|| {
                format!(
                    "--notify {kind}: no URL: set {var}, or [notify] {kind} in .ralph/config.toml"
                )
            })?,
            Some(v) => match v.strip_prefix("env:") {
                Some(name) => env(name).ok_or_else(|| {
                    format!("--notify {kind}=env:{name}: the environment has no {name}")
                })?,
                None => {
                    return Err(format!(
                        "--notify {kind}=…: a webhook URL is a secret, and a command line is seen by every user of the machine: put it in {var} (or another variable, with --notify {kind}=env:VAR) or [notify] {kind}, and give --notify {kind}"
                    ));
                }
            },
        };
        Channel::of(kind, &url)?.ok_or_else(bad)
    }

    /// A channel by its kind and value (a `[notify]` key or `--notify`'s
    /// parts): `None` for a kind there is not, or a command that is empty.
    pub fn of(kind: &str, value: &str) -> Result<Option<Channel>, String> {
        let value = value.trim();
        Ok(Some(match kind {
            "command" if !value.is_empty() => Channel::Command(value.to_string()),
            "ntfy" => Channel::Ntfy(url(kind, value)?),
            "slack" => Channel::Slack(url(kind, value)?),
            "discord" => Channel::Discord(url(kind, value)?),
            _ => return Ok(None),
        }))
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Channel::Desktop => "desktop",
            Channel::Ntfy(_) => "ntfy",
            Channel::Slack(_) => "slack",
            Channel::Discord(_) => "discord",
            Channel::Command(_) => "command",
        }
    }

    /// How it is shown and recorded: a URL is a secret (a webhook's path is
    /// its key), so only its scheme and host; a command as it is (the user's).
    pub fn shown(&self) -> String {
        match self {
            Channel::Ntfy(u) | Channel::Slack(u) | Channel::Discord(u) => {
                format!("{} {}", self.kind(), redact(u))
            }
            Channel::Command(c) => format!("command `{c}`"),
            Channel::Desktop => "desktop".into(),
        }
    }
}

/// The channels whose target is a URL, a secret.
const HTTP_KINDS: [&str; 3] = ["ntfy", "slack", "discord"];

/// An http(s) URL with a host, for a channel.
fn url(kind: &str, value: &str) -> Result<String, String> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !value.contains(char::is_whitespace) => {
            Ok(value.to_string())
        }
        _ => Err(format!(
            "{kind}: {} is not an http(s) URL with a host",
            redact(value)
        )),
    }
}

/// `https://hooks.slack.com/…`: scheme and host, never the path or query.
pub fn redact(u: &str) -> String {
    let (scheme, rest) = u.split_once("://").unwrap_or(("", u));
    let host: String = rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        // A user:password@ before the host is a secret too.
        .rsplit('@')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        .collect();
    if scheme.is_empty() {
        return "…".into();
    }
    format!("{scheme}://{host}/…")
}

/// A `--notify` value as it may be shown in an error: any URL in it redacted.
fn redact_text(s: &str) -> String {
    match s.split_once('=') {
        Some((k, v)) if v.contains("://") => format!("{k}={}", redact(v)),
        _ => s.chars().take(40).collect(),
    }
}

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    /// The run is complete.
    Complete,
    /// It stopped for a human (WAITING, stuck, no progress, rejected by the
    /// reviewer too often).
    Waiting,
    /// It failed.
    Failed,
    /// It reached a limit of its own (iterations, cost, limit waits).
    Stopped,
    /// It waits for a usage limit longer than `limit_wait_over`.
    Limit,
    /// The gate or the reviewer sent the work back.
    Rejected,
}

impl Event {
    pub const ALL: [Event; 6] = [
        Event::Complete,
        Event::Waiting,
        Event::Failed,
        Event::Stopped,
        Event::Limit,
        Event::Rejected,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Event::Complete => "complete",
            Event::Waiting => "waiting",
            Event::Failed => "failed",
            Event::Stopped => "stopped",
            Event::Limit => "limit",
            Event::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Result<Event, String> {
        Event::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                format!(
                    "[notify] events: {s:?} is not one of {}",
                    Event::ALL.map(Event::name).join(", ")
                )
            })
    }
}

/// What the run's notifications are.
#[derive(Debug, Clone, PartialEq)]
pub struct Notifier {
    pub channels: Vec<Channel>,
    pub events: Vec<Event>,
    /// A usage-limit wait longer than this is told (`limit` events).
    pub limit_wait_over: std::time::Duration,
}

/// One notice: which loop, what happened, what to do. Only ralph's own
/// words: never a session's text (a WAITING reason, an error, a finding).
/// The loop's name is a clone's (its folder, its branch): each channel gets
/// it escaped its own way, so that it mentions nobody and links nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub event: Event,
    pub title: String,
    pub line: String,
    name: String,
    said: String,
}

impl Notice {
    /// `what` and `todo` are ralph's own phrases; `name` is the loop's (the
    /// project folder, and the branch of a worktree loop).
    pub fn new(event: Event, name: &str, what: &str, todo: &str) -> Notice {
        let name = crate::output::visible_line(name);
        // The to-do starts a sentence of its own.
        let mut first = todo.chars();
        let todo = first
            .next()
            .map(|c| c.to_uppercase().chain(first).collect::<String>())
            .unwrap_or_default();
        Notice {
            event,
            title: format!("ralph: {name}"),
            line: format!("ralph · {name}: {what}. {todo}"),
            said: format!("{what}. {todo}"),
            name,
        }
    }

    /// The line with the name as code (no link, no mention is made inside
    /// it; a backtick in it would end it, so none is left) and each part
    /// escaped by `esc`.
    fn marked(&self, esc: impl Fn(&str) -> String) -> String {
        let name = self.name.replace('`', "'");
        format!("ralph · `{}`: {}", esc(&name), esc(&self.said))
    }
}

/// Slack's own escaping: `&`, `<` and `>` (what `<!channel>`, `<@U1>` and
/// `<url|text>` are made of).
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Markup for desktop notifiers that read the body as markup.
pub fn markup_escape(s: &str) -> String {
    slack_escape(s)
}

/// An HTTP channel's request: where, its content type and body, and extra
/// headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    pub url: String,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

/// What an HTTP channel is sent; `None` for the others.
pub fn post(ch: &Channel, n: &Notice) -> Option<Post> {
    Some(match ch {
        Channel::Ntfy(u) => Post {
            url: u.clone(),
            content_type: "text/plain; charset=utf-8",
            headers: vec![
                // Header values must be ASCII: the title's other characters go.
                ("Title", n.title.chars().filter(char::is_ascii).collect()),
                ("Tags", format!("ralph,{}", n.event.name())),
            ],
            body: n.line.clone(),
        },
        Channel::Slack(u) => Post {
            url: u.clone(),
            content_type: "application/json",
            headers: Vec::new(),
            body: serde_json::json!({ "text": n.marked(slack_escape) }).to_string(),
        },
        Channel::Discord(u) => Post {
            url: u.clone(),
            content_type: "application/json",
            headers: Vec::new(),
            // No one mentioned, whatever the text holds; no link previews.
            body: serde_json::json!({
                "content": n.marked(str::to_string),
                "allowed_mentions": { "parse": [] },
                "flags": 4
            })
            .to_string(),
        },
        Channel::Desktop | Channel::Command(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Channel, String> {
        let env = |k: &str| match k {
            "RALPH_NOTIFY_SLACK" => Some("https://hooks.slack.com/services/T0/B0/s3cr3t".into()),
            "MY_NTFY" => Some("https://ntfy.sh/t".into()),
            _ => None,
        };
        let config = |k: &str| (k == "discord").then(|| "http://d.example/h".to_string());
        Channel::parse(s, &env, &config)
    }

    #[test]
    fn channels_parse_and_urls_are_never_shown_whole() {
        let c = parse("slack").unwrap();
        assert_eq!(
            c,
            Channel::Slack("https://hooks.slack.com/services/T0/B0/s3cr3t".into())
        );
        assert_eq!(c.shown(), "slack https://hooks.slack.com/…");
        assert_eq!(parse("desktop").unwrap(), Channel::Desktop);
        assert_eq!(
            parse("ntfy=env:MY_NTFY").unwrap(),
            Channel::Ntfy("https://ntfy.sh/t".into())
        );
        assert_eq!(
            parse("discord").unwrap(),
            Channel::Discord("http://d.example/h".into())
        );
        assert_eq!(
            parse("command=notify.sh --loud").unwrap().shown(),
            "command `notify.sh --loud`"
        );
        assert_eq!(
            redact("https://user:pw@ntfy.example.org:8080/topic?x=1"),
            "https://ntfy.example.org:8080/…"
        );
        assert_eq!(redact("no-scheme/secret"), "…");
        for (bad, says) in [
            ("pager=https://x.org/s3cr3t", "expected desktop"),
            (
                "slack=https://hooks.slack.com/s3cr3t",
                "put it in RALPH_NOTIFY_SLACK",
            ),
            (
                "slack=hooks.slack.com/s3cr3t",
                "put it in RALPH_NOTIFY_SLACK",
            ),
            ("ntfy", "no URL: set RALPH_NOTIFY_NTFY"),
            ("ntfy=env:NOPE", "the environment has no NOPE"),
            ("command=  ", "expected desktop"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says) && !e.contains("s3cr3t"), "{bad}: {e}");
        }
        // A URL from the environment is checked like one from the config.
        let env = |_: &str| Some("https:///s3cr3t".to_string());
        let e = Channel::parse("ntfy", &env, &|_| None).unwrap_err();
        assert!(
            e.contains("not an http(s) URL") && !e.contains("s3cr3t"),
            "{e}"
        );
        // What is no URL is shown as given, to be corrected.
        assert!(parse("pagr=plain").unwrap_err().contains("\"pagr=plain\""));
    }

    #[test]
    fn a_clones_name_mentions_nobody_and_links_nowhere() {
        let n = Notice::new(
            Event::Waiting,
            "app (<!channel>-@everyone `x` <https://evil.example|click>)",
            "waiting for a human",
            "act.",
        );
        let slack = post(&Channel::Slack("https://s.example/h".into()), &n).unwrap();
        let v: serde_json::Value = serde_json::from_str(&slack.body).unwrap();
        let text = v["text"].as_str().unwrap();
        assert!(
            !text.contains('<') && !text.contains('>') && text.contains("&lt;!channel&gt;"),
            "{text}"
        );
        assert_eq!(
            text.matches('`').count(),
            2,
            "the name stays one code span: {text}"
        );
        let discord = post(&Channel::Discord("https://d.example/h".into()), &n).unwrap();
        let v: serde_json::Value = serde_json::from_str(&discord.body).unwrap();
        assert_eq!(v["allowed_mentions"], serde_json::json!({"parse": []}));
        assert_eq!(v["flags"], 4);
        let content = v["content"].as_str().unwrap();
        assert!(
            content.starts_with("ralph · `app (<!channel>-@everyone 'x'")
                && content.matches('`').count() == 2,
            "{content}"
        );
        assert_eq!(markup_escape("<a href='x'>&"), "&lt;a href='x'&gt;&amp;");
    }

    #[test]
    fn each_http_channel_gets_its_own_payload() {
        let n = Notice::new(
            Event::Waiting,
            "app (ralph/x)",
            "waiting for a human",
            "act.",
        );
        assert_eq!(n.line, "ralph · app (ralph/x): waiting for a human. Act.");
        let slack = post(&Channel::Slack("https://s.example/h".into()), &n).unwrap();
        let v: serde_json::Value = serde_json::from_str(&slack.body).unwrap();
        let marked = "ralph · `app (ralph/x)`: waiting for a human. Act.";
        assert_eq!(v, serde_json::json!({"text": marked}));
        let discord = post(&Channel::Discord("https://d.example/h".into()), &n).unwrap();
        let v: serde_json::Value = serde_json::from_str(&discord.body).unwrap();
        assert_eq!(v["content"], marked);
        let ntfy = post(&Channel::Ntfy("https://ntfy.sh/t".into()), &n).unwrap();
        assert_eq!(
            (
                ntfy.body.as_str(),
                ntfy.headers[0].1.as_str(),
                ntfy.headers[1].1.as_str()
            ),
            (n.line.as_str(), "ralph: app (ralph/x)", "ralph,waiting")
        );
        assert_eq!(post(&Channel::Desktop, &n), None);
        // A loop's name never carries an escape sequence.
        let n = Notice::new(Event::Failed, "a\u{1b}]52;c;x\u{7}b", "failed", "see.");
        assert!(
            !n.line.contains('\u{1b}') && !n.title.contains('\u{7}'),
            "{n:?}"
        );
    }

    #[test]
    fn events_have_names() {
        assert_eq!(Event::parse("limit").unwrap(), Event::Limit);
        assert!(
            Event::parse("done")
                .unwrap_err()
                .contains("complete, waiting")
        );
    }
}
