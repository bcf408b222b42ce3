//! A real browser for `ralph serve`'s page: the system's Chromium, headless,
//! driven over its DevTools protocol; and `ralph serve` started for a test.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;

use super::{Live, TestEnv};

/// `ralph serve` running for a test, and the address it printed.
pub struct Served {
    pub live: Live,
    /// `http://127.0.0.1:PORT/?token=...`
    pub url: String,
    pub port: u16,
    pub token: String,
}

impl Served {
    pub fn start(env: &TestEnv) -> Served {
        let live = Live::start(env.ralph().arg("serve"));
        live.wait_for("?token=", Duration::from_secs(30));
        let out = live.stdout();
        let url = out
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("http://"))
            .expect("the address")
            .to_string();
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let token = url.rsplit_once("token=").unwrap().1.to_string();
        Served {
            live,
            url,
            port,
            token,
        }
    }
}

/// A headless Chromium with one tab.
pub struct Page {
    _browser: Browser,
    pub tab: Arc<Tab>,
}

impl Page {
    pub fn open(url: &str) -> Page {
        let chromium = super::chromium_tool();
        let browser = Browser::new(LaunchOptions {
            headless: true,
            // Root in a container: Chromium's own sandbox needs a user.
            sandbox: false,
            window_size: Some((1280, 900)),
            path: Some(chromium),
            idle_browser_timeout: Duration::from_secs(600),
            ..LaunchOptions::default()
        })
        .expect("start chromium");
        let tab = browser.new_tab().expect("a tab");
        tab.set_default_timeout(Duration::from_secs(60));
        tab.navigate_to(url).expect("open the page");
        tab.wait_until_navigated().expect("the page loads");
        Page {
            _browser: browser,
            tab,
        }
    }

    /// What `js` comes to in the page.
    pub fn eval(&self, js: &str) -> Value {
        self.tab
            .evaluate(js, false)
            .unwrap_or_else(|e| panic!("{js}: {e}"))
            .value
            .unwrap_or(Value::Null)
    }

    /// The page's text as a user reads it.
    pub fn text(&self) -> String {
        self.eval("document.body.innerText")
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Wait until the page shows `text`; panics with what it shows if not.
    pub fn wait_for_text(&self, text: &str, limit: Duration) {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if self.text().contains(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("the page never showed {text:?}:\n{}", self.text());
    }

    /// Click the element `selector` names, as a user's mouse does.
    pub fn click(&self, selector: &str) {
        let element = self
            .tab
            .wait_for_element(selector)
            .unwrap_or_else(|e| panic!("{selector}: {e}\n{}", self.text()));
        element
            .click()
            .unwrap_or_else(|e| panic!("click {selector}: {e}"));
    }

    /// Type into the field `selector` names.
    pub fn type_into(&self, selector: &str, text: &str) {
        self.tab
            .wait_for_element(selector)
            .unwrap_or_else(|e| panic!("{selector}: {e}"))
            .type_into(text)
            .unwrap_or_else(|e| panic!("type into {selector}: {e}"));
    }

    /// A screenshot of the page, kept under `target/serve-screenshots/` for
    /// review.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let png = self
            .tab
            .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
            .expect("a screenshot");
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/serve-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}
