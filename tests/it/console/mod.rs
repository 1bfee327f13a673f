//! The console (`/console/`) as its users see it: its files served
//! without a token under the console's policy, and its pages driven in
//! headless Chromium through WebDriver (chromedriver, started by
//! scripts/test; its URL in `HOOKD_WEBDRIVER_URL`). Every page a test
//! visits is saved as a screenshot in `$HOOKD_SCREENSHOTS` (default
//! `target/screenshots/`).

mod browser;
mod bulk;
mod dark;
mod endpoints;
mod files;
mod links;
mod notifications;
mod overview;
mod portal;
mod routes;
mod search;
mod session;
mod timeline;

pub use browser::Browser;
