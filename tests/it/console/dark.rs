//! Dark mode follows the system's setting (`prefers-color-scheme`), live:
//! the pages' colours change, and text keeps a contrast of at least 4.5:1
//! on its background.

use serde_json::json;

use crate::backends::Backend;
use crate::console::Browser;
use crate::helpers::TOKEN;

/// The page's background, and the lowest contrast of its text colours on
/// the backgrounds they are set on (WCAG's ratio of relative luminances).
const PROBE: &str = r#"
const css = getComputedStyle(document.documentElement);
const rgb = (name) => {
  const probe = document.createElement('span');
  probe.style.color = css.getPropertyValue(name);
  document.body.appendChild(probe);
  const [r, g, b] = getComputedStyle(probe).color.match(/\d+/g).map(Number);
  probe.remove();
  return [r, g, b];
};
const luminance = (c) => {
  const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const contrast = (a, b) => {
  const [x, y] = [luminance(rgb(a)), luminance(rgb(b))].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
};
const pairs = [['--fg', '--bg'], ['--fg', '--card'], ['--muted', '--card'], ['--muted', '--head'],
  ['--accent', '--card'], ['--bad', '--card'], ['--ok', '--card'], ['--warn', '--card'],
  ['--fg', '--field'], ['--hint', '--bg'], ['--bad', '--error-bg'], ['--fg', '--notice-bg']];
const lowest = pairs.map(([a, b]) => [a + ' on ' + b, contrast(a, b)]).sort((p, q) => p[1] - q[1])[0];
return {
  dark: matchMedia('(prefers-color-scheme: dark)').matches,
  background: getComputedStyle(document.documentElement).backgroundColor,
  lowest,
};
"#;

async fn the_console_follows_the_systems_dark_mode_with_readable_contrast(backend: Backend) {
    let app = backend.spawn().await;
    app.endpoint(json!({"uid": "shop", "owner": "merchant-7"}))
        .await;
    app.notify(json!({"endpoint": "shop", "key": "order-1", "payload": {}, "delay": "1h"}))
        .await;
    let Some(browser) = Browser::open(&app, &backend, "dark").await else {
        return;
    };
    browser.prefer_color_scheme("dark").await;
    browser.sign_in(TOKEN).await;
    browser.wait_count("totals", 1).await;
    let dark = browser.run(PROBE).await;
    assert_eq!(dark["dark"], json!(true), "{dark}");
    assert_eq!(dark["background"], json!("rgb(12, 17, 29)"), "{dark}");
    let lowest = dark["lowest"][1].as_f64().unwrap();
    assert!(lowest >= 4.5, "dark text below 4.5:1: {dark}");
    browser.screenshot("dark-overview").await;
    browser.goto("#/notifications").await;
    browser.wait_count("result", 1).await;
    browser.screenshot("dark-notifications").await;

    // The system back to light: the same page, at once.
    browser.prefer_color_scheme("light").await;
    let light = browser.run(PROBE).await;
    assert_eq!(light["dark"], json!(false), "{light}");
    assert_eq!(light["background"], json!("rgb(246, 247, 249)"), "{light}");
    let lowest = light["lowest"][1].as_f64().unwrap();
    assert!(lowest >= 4.5, "light text below 4.5:1: {light}");
    browser.close().await;
}

both!(the_console_follows_the_systems_dark_mode_with_readable_contrast);
