//! How settings are read where serde's own reading would refuse or
//! mislead: addresses and networks refused in words that show the form,
//! and text read as text whatever it looks like (figment types what it
//! reads from the environment).

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use serde::Deserialize;

/// An address and port, refused in words that show the form.
pub(super) fn socket_address<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(d)?;
    text.trim().parse().map_err(|_| {
        serde::de::Error::custom(format!(
            "`{}` is not an address and a port such as 127.0.0.1:8080 or [::1]:8080",
            crate::domain::problem::shown(&text)
        ))
    })
}

pub(super) fn some_socket_address<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    socket_address(d).map(Some)
}

/// Networks in CIDR form, or single addresses (`10.0.0.5` is
/// `10.0.0.5/32`, `::1` is `::1/128`).
pub(super) fn networks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|text| {
            let text = text.trim();
            text.parse::<IpNet>()
                .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    serde::de::Error::custom(format!(
                        "`{}` is not a network such as 10.0.0.0/8 or an address such as 10.0.0.5",
                        crate::domain::problem::shown(text)
                    ))
                })
        })
        .collect()
}

/// A text setting, read as written whatever it looks like: from the
/// environment, `HOOKD_REDIS__PREFIX=123` or `HOOKD_PORTAL__NAME=2024` is
/// text, as it would be quoted in TOML.
pub(super) fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Text;
    impl serde::de::Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("text")
        }
        fn visit_str<E>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_string<E>(self, v: String) -> Result<String, E> {
            Ok(v)
        }
        fn visit_i64<E>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i128<E>(self, v: i128) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u128<E>(self, v: u128) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_bool<E>(self, v: bool) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E>(self, v: f64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_char<E>(self, v: char) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_any(Text)
}

pub(super) fn text_path<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::path::PathBuf, D::Error> {
    text(d).map(std::path::PathBuf::from)
}
