//! A headless Chromium session on a test's hookd, with the few verbs the
//! console's tests need: open a route, find by `data-test`, type, click,
//! wait for text (polling with a deadline), and a screenshot of each page.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::backends::Backend;
use crate::helpers::{eventually, TestApp};

/// How long a page may take to show what a test waits for.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// Chromium is heavy for the 2-core machines the suite runs on: at most
/// two browsers at once, whatever else runs.
static BROWSERS: Semaphore = Semaphore::const_new(2);

pub struct Browser {
    client: Client,
    base: String,
    name: String,
    shots: AtomicUsize,
    _profile: tempfile::TempDir,
    _permit: SemaphorePermit<'static>,
}

/// Where screenshots go: `$HOOKD_SCREENSHOTS`, or target/screenshots/.
fn screenshot_dir() -> PathBuf {
    std::env::var_os("HOOKD_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/screenshots"))
}

impl Browser {
    /// A browser on `app`'s console, or `None` (with a loud message) when
    /// no chromedriver runs because the test runs outside scripts/test.
    pub async fn open(app: &TestApp, backend: &Backend, test: &str) -> Option<Self> {
        Self::open_sized(app, backend, test, (1280, 800)).await
    }

    pub async fn open_sized(
        app: &TestApp,
        backend: &Backend,
        test: &str,
        (width, height): (u32, u32),
    ) -> Option<Self> {
        let Some(webdriver) = std::env::var("HOOKD_WEBDRIVER_URL").ok() else {
            // scripts/test exports SERVICES_DIR and starts chromedriver: a
            // run through it without a browser is a broken run, not a skip.
            assert!(
                std::env::var_os("SERVICES_DIR").is_none(),
                "scripts/test ran without HOOKD_WEBDRIVER_URL: chromedriver did not start"
            );
            eprintln!(
                "\n!!!! SKIPPED browser test {test}: HOOKD_WEBDRIVER_URL is not set. \
                 Run it with scripts/test, which installs and starts chromedriver. !!!!\n"
            );
            return None;
        };
        let permit = BROWSERS
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let profile = tempfile::tempdir().expect("a browser profile dir");
        let binary = std::env::var("HOOKD_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", "--disable-quic",
                    "--hide-scrollbars", "--force-device-scale-factor=1",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        // Chromium now and then exits as it starts on a loaded machine
        // ("Chrome instance exited"): a session is asked for three times.
        let mut tries = 0;
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&webdriver)
                .await
            {
                Ok(client) => break client,
                Err(error) if tries < 2 => {
                    tries += 1;
                    eprintln!("no Chromium session ({error}); asking again");
                }
                Err(error) => panic!("chromedriver starts a Chromium session: {error:?}"),
            }
        };
        let mode = if backend.is_embedded() {
            "sqlite"
        } else {
            "postgres"
        };
        Some(Self {
            client,
            base: app.base.clone(),
            name: format!("{test}-{mode}"),
            shots: AtomicUsize::new(0),
            _profile: profile,
            _permit: permit,
        })
    }

    /// Asks Chromium to report `prefers-color-scheme: <scheme>` (`dark`,
    /// `light`) to the pages, as a system set so would: chromedriver's
    /// bridge to the DevTools protocol (`Emulation.setEmulatedMedia`).
    pub async fn prefer_color_scheme(&self, scheme: &str) {
        let command = Cdp {
            cmd: "Emulation.setEmulatedMedia",
            params: json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        };
        self.client
            .issue_cmd(command)
            .await
            .expect("chromedriver emulates the colour scheme");
    }

    /// Opens `/console/` plus `fragment` (`#/notifications`, `#portal=...`).
    pub async fn goto(&self, fragment: &str) {
        let url = format!("{}/console/{fragment}", self.base);
        self.client.goto(&url).await.expect("the console opens");
    }

    /// Opens a whole URL, such as a portal link.
    pub async fn goto_url(&self, url: &str) {
        self.client.goto(url).await.expect("the URL opens");
    }

    /// The element marked `data-test="{test}"`, once it shows.
    pub async fn find(&self, test: &str) -> Element {
        let selector = format!("[data-test=\"{test}\"]");
        eventually(PATIENCE, &format!("[data-test={test}] to show"), || {
            let selector = selector.clone();
            async move { self.client.find(Locator::Css(&selector)).await.ok() }
        })
        .await
    }

    /// Every element marked `data-test="{test}"` now.
    pub async fn all(&self, test: &str) -> Vec<Element> {
        let selector = format!("[data-test=\"{test}\"]");
        self.client
            .find_all(Locator::Css(&selector))
            .await
            .unwrap_or_default()
    }

    pub async fn text(&self, test: &str) -> String {
        self.find(test).await.text().await.unwrap_or_default()
    }

    /// Clears `data-test="{test}"` and types `text` into it. Plain text is
    /// typed again until the field holds it: the console's pages render
    /// again every few seconds, and a render between the clear and the keys
    /// puts back the field's old value, which the keys then add to ("10"
    /// and "0" made "100", a valid burst, where the test typed an invalid
    /// one). Text with WebDriver's keys in it (Enter, U+E007, which submits
    /// its form) is typed once.
    pub async fn type_into(&self, test: &str, text: &str) {
        if text.chars().any(|c| ('\u{E000}'..='\u{F8FF}').contains(&c)) {
            let field = self.find(test).await;
            field.clear().await.expect("the field clears");
            field.send_keys(text).await.expect("the field takes keys");
            return;
        }
        eventually(
            PATIENCE,
            &format!("[data-test={test}] to hold {text:?}"),
            || async {
                let field = self.find(test).await;
                field.clear().await.ok()?;
                field.send_keys(text).await.ok()?;
                let value = field.prop("value").await.ok()??;
                (value == text).then_some(())
            },
        )
        .await;
    }

    /// Clicks `data-test="{test}"`, found again for each try: a page that
    /// rebuilds a form (after a save, say) replaces the element a first
    /// find returned, and a replaced element never takes a click.
    pub async fn click(&self, test: &str) {
        let selector = format!("[data-test=\"{test}\"]");
        eventually(
            PATIENCE,
            &format!("[data-test={test}] to take a click"),
            || {
                let selector = selector.clone();
                async move {
                    let element = self.client.find(Locator::Css(&selector)).await.ok()?;
                    element.click().await.ok()
                }
            },
        )
        .await;
    }

    /// Waits until the text of `data-test="{test}"` passes `check`; the text.
    pub async fn wait_text(&self, test: &str, what: &str, check: impl Fn(&str) -> bool) -> String {
        let selector = format!("[data-test=\"{test}\"]");
        eventually(PATIENCE, what, || {
            let selector = selector.clone();
            let check = &check;
            async move {
                let element = self.client.find(Locator::Css(&selector)).await.ok()?;
                let text = element.text().await.ok()?;
                check(&text).then_some(text)
            }
        })
        .await
    }

    /// Waits until `data-test="{test}"` is on the page `count` times or more.
    pub async fn wait_count(&self, test: &str, count: usize) -> usize {
        eventually(
            PATIENCE,
            &format!("{count} of [data-test={test}]"),
            || async {
                let found = self.all(test).await.len();
                (found >= count).then_some(found)
            },
        )
        .await
    }

    /// Runs `script` in the page (WebDriver's execute: a test's own
    /// probe, not the page's code, so the page's policy does not apply).
    pub async fn run(&self, script: &str) -> Value {
        self.client
            .execute(script, Vec::new())
            .await
            .expect("the script runs")
    }

    /// The form fields on the page without a label (their ids).
    pub async fn unlabelled(&self) -> Value {
        self.run(
            "return [...document.querySelectorAll('input, select, textarea')]\
               .filter((f) => !f.labels || f.labels.length === 0).map((f) => f.id || f.name);",
        )
        .await
    }

    pub async fn fragment(&self) -> String {
        let url = self.client.current_url().await.expect("a current URL");
        url.fragment().unwrap_or_default().to_string()
    }

    /// Saves the page as `{test}-{mode}-{nn}-{page}.png`; the path.
    pub async fn screenshot(&self, page: &str) -> PathBuf {
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("the screenshot dir");
        let n = self.shots.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{}-{n:02}-{page}.png", self.name));
        // The whole page, not only the window: the window grows to the
        // page's height for the shot (up to 4000 px), then shrinks back.
        let sizes = self
            .run("return [window.outerWidth, window.outerHeight, window.innerHeight, document.documentElement.scrollHeight]")
            .await;
        let size = |i: usize| sizes[i].as_u64().unwrap_or(0) as u32;
        let (width, height, inner, page) = (size(0), size(1), size(2), size(3));
        let grow = page > inner;
        if grow {
            self.set_size(width, (height + page - inner).min(4000))
                .await;
        }
        let png = self.client.screenshot().await.expect("a screenshot");
        if grow {
            self.set_size(width, height).await;
        }
        std::fs::write(&path, png).expect("the screenshot is written");
        path
    }

    pub async fn set_size(&self, width: u32, height: u32) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("the window resizes");
    }

    /// Signs in with `token` on the sign-in form.
    pub async fn sign_in(&self, token: &str) {
        self.goto("").await;
        self.type_into("token", token).await;
        self.click("sign-in-submit").await;
        self.find("sign-out").await;
    }

    /// Ends the session, after checking the page's policy refused
    /// nothing it did (no inline script or style, no eval).
    pub async fn close(self) {
        let refused = self
            .run("return window.hookdPolicyViolations || null")
            .await;
        assert_eq!(
            refused,
            serde_json::json!([]),
            "the console broke its own policy"
        );
        let _ = self.client.close().await;
    }
}

/// A DevTools protocol command through chromedriver
/// (`POST /session/{id}/goog/cdp/execute`).
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        let session = session_id.unwrap_or_default();
        base_url.join(&format!("session/{session}/goog/cdp/execute"))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({"cmd": self.cmd, "params": self.params});
        (http::Method::POST, Some(body.to_string()))
    }
}
