//! Who may ask `ralph serve` anything: a request must name a host this
//! server answers as (no DNS rebinding), come from its own page (no
//! cross-site request), and carry the token printed at start (in the URL
//! once, then a cookie). Pure: the server hands in the request's parts.

use std::net::IpAddr;

/// What the guard reads of a request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    pub method: &'a str,
    /// The `token` of the query, if any.
    pub query_token: Option<&'a str>,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub cookie: Option<&'a str>,
    /// `Sec-Fetch-Site`, which browsers send and pages cannot forge.
    pub fetch_site: Option<&'a str>,
}

/// How a request that may pass showed its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Cookie,
    /// In the URL: the page is sent a cookie and sent on to the same path
    /// without it (an address bar, a history, a referrer never keep it).
    Query,
}

/// Why a request is refused; its `Display` is what the refusal says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Host,
    Origin,
    CrossSite,
    NoToken,
    WrongToken,
}

impl Refused {
    pub fn status(&self) -> u16 {
        match self {
            Refused::Host => 421,
            Refused::Origin | Refused::CrossSite => 403,
            Refused::NoToken | Refused::WrongToken => 401,
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::Host => {
                "refused: this server answers only to the address it printed (the request named another host)"
            }
            Refused::Origin => "refused: the request came from another site's page",
            Refused::CrossSite => "refused: a cross-site request",
            Refused::NoToken => {
                "refused: no token; open the address `ralph serve` printed (it carries the token)"
            }
            Refused::WrongToken => {
                "refused: wrong token; open the address this `ralph serve` printed (a restarted server has a new one)"
            }
        })
    }
}

/// The server's side: its token, its port, and the hosts it answers as.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    port: u16,
    /// Names (and address literals) a `Host` may carry, besides loopback.
    names: Vec<String>,
    /// Listening on every address: any address literal is one of ours.
    any_address: bool,
}

impl Guard {
    /// `listen`: the address bound; `names`: the machine's own names, which
    /// a phone on the network may use when every address is bound.
    pub fn new(token: String, listen: IpAddr, port: u16, names: &[String]) -> Guard {
        let mut own = vec![listen.to_string()];
        if listen.is_unspecified() {
            own.extend(names.iter().map(|n| n.to_ascii_lowercase()));
        }
        Guard {
            token,
            port,
            names: own,
            any_address: listen.is_unspecified(),
        }
    }

    /// The cookie that carries the token: named by port, since browsers
    /// keep cookies per host, whatever the port, and two servers on one
    /// machine must not overwrite each other's.
    pub fn cookie_name(&self) -> String {
        format!("ralph-serve-{}", self.port)
    }

    pub fn check(&self, a: &Asked) -> Result<Shown, Refused> {
        let host = a.host.ok_or(Refused::Host)?;
        if !self.host_ok(host) {
            return Err(Refused::Host);
        }
        // A browser names the page a request came from; ours is the only
        // one allowed. A change needs it named: a form or a script on
        // another site cannot leave it out.
        match a.origin {
            Some(o) if !same_origin(o, host) => return Err(Refused::Origin),
            None if a.method != "GET" && a.method != "HEAD" => return Err(Refused::Origin),
            _ => {}
        }
        if let Some(site) = a.fetch_site
            && !matches!(site, "same-origin" | "none")
        {
            return Err(Refused::CrossSite);
        }
        // Every cookie of our name counts, not the first: a page on another
        // port of this host can plant one (cookies ignore ports), and the
        // browser sends it first when its path is longer than ours.
        let cookies = a
            .cookie
            .map(|c| cookie_values(c, &self.cookie_name()))
            .unwrap_or_default();
        if cookies.iter().any(|c| equal(c, &self.token)) {
            return Ok(Shown::Cookie);
        }
        match a.query_token {
            Some(q) if equal(q, &self.token) => Ok(Shown::Query),
            None if cookies.is_empty() => Err(Refused::NoToken),
            _ => Err(Refused::WrongToken),
        }
    }

    fn host_ok(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        if port != self.port {
            return false;
        }
        let name = name.to_ascii_lowercase();
        if name == "localhost" {
            return true;
        }
        match name.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback() || self.any_address || self.names.contains(&ip.to_string()),
            Err(_) => self.any_address && self.names.contains(&name),
        }
    }
}

/// `name` and port of a `Host` header (`[::1]:8080`, `127.0.0.1:8080`,
/// `example:80`); a host without a port is on 80.
fn split_host(host: &str) -> Option<(&str, u16)> {
    if let Some(rest) = host.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => 80,
            None => return None,
        };
        return Some((ip, port));
    }
    match host.rsplit_once(':') {
        Some((name, port)) => Some((name, port.parse().ok()?)),
        None => Some((host, 80)),
    }
    .filter(|(name, _)| !name.is_empty() && !name.contains(':'))
}

fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .strip_prefix("http://")
        .is_some_and(|h| h.eq_ignore_ascii_case(host))
}

/// The values of cookie `name` in a `Cookie` header (one per path it was
/// set for).
fn cookie_values<'a>(header: &'a str, name: &str) -> Vec<&'a str> {
    header
        .split(';')
        .filter_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == name).then_some(v)
        })
        .collect()
}

/// Compared in time that does not depend on where they differ.
fn equal(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef0123456789abcdef";

    fn local() -> Guard {
        Guard::new(T.into(), "127.0.0.1".parse().unwrap(), 8080, &[])
    }

    fn get(host: &str) -> Asked<'_> {
        Asked {
            method: "GET",
            host: Some(host),
            cookie: Some("x=1; ralph-serve-8080=0123456789abcdef0123456789abcdef"),
            ..Asked::default()
        }
    }

    #[test]
    fn loopback_names_on_the_port_pass_and_every_other_host_is_refused() {
        let g = local();
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "LOCALHOST:8080",
        ] {
            assert_eq!(g.check(&get(host)), Ok(Shown::Cookie), "{host}");
        }
        // A rebinding attacker's name, another port, no port, junk.
        for host in [
            "evil.example:8080",
            "127.0.0.1:8081",
            "127.0.0.1",
            "192.168.1.5:8080",
            "127.0.0.1:8080:1",
            ":8080",
            "[::1]x:8080",
            // An IPv6 address without its brackets names no port for sure.
            "::1:8080",
        ] {
            assert_eq!(g.check(&get(host)), Err(Refused::Host), "{host}");
        }
        let none = Asked {
            host: None,
            ..get("x")
        };
        assert_eq!(g.check(&none), Err(Refused::Host));
    }

    /// On port 80 a host may leave its port out; an address in brackets
    /// with anything else after it is no host.
    #[test]
    fn a_host_without_a_port_is_on_80() {
        let g = Guard::new(T.into(), "127.0.0.1".parse().unwrap(), 80, &[]);
        let cookie = "ralph-serve-80=0123456789abcdef0123456789abcdef";
        let at = |host| Asked {
            cookie: Some(cookie),
            ..get(host)
        };
        assert_eq!(g.check(&at("[::1]")), Ok(Shown::Cookie));
        assert_eq!(g.check(&at("localhost")), Ok(Shown::Cookie));
        assert_eq!(g.check(&at("[::1]x")), Err(Refused::Host));
    }

    #[test]
    fn on_every_address_a_phone_may_use_an_address_or_the_machines_name() {
        let g = Guard::new(T.into(), "0.0.0.0".parse().unwrap(), 8080, &["box".into()]);
        for host in ["192.168.1.5:8080", "box:8080", "127.0.0.1:8080"] {
            assert_eq!(g.check(&get(host)), Ok(Shown::Cookie), "{host}");
        }
        assert_eq!(g.check(&get("evil.example:8080")), Err(Refused::Host));
        // Bound to one address: that one, and loopback.
        let g = Guard::new(T.into(), "10.0.0.2".parse().unwrap(), 8080, &["box".into()]);
        assert_eq!(g.check(&get("10.0.0.2:8080")), Ok(Shown::Cookie));
        assert_eq!(g.check(&get("10.0.0.3:8080")), Err(Refused::Host));
        assert_eq!(g.check(&get("box:8080")), Err(Refused::Host));
    }

    #[test]
    fn a_foreign_origin_or_a_cross_site_fetch_is_refused_and_a_change_must_name_its_origin() {
        let g = local();
        let h = "127.0.0.1:8080";
        let with = |method, origin, site| Asked {
            method,
            origin,
            fetch_site: site,
            ..get(h)
        };
        let ok = Ok(Shown::Cookie);
        assert_eq!(
            g.check(&with("POST", Some("http://127.0.0.1:8080"), None)),
            ok
        );
        assert_eq!(
            g.check(&with(
                "GET",
                Some("http://127.0.0.1:8080"),
                Some("same-origin")
            )),
            ok
        );
        assert_eq!(g.check(&with("GET", None, Some("none"))), ok);
        assert_eq!(
            g.check(&with("POST", Some("http://evil.example"), None)),
            Err(Refused::Origin)
        );
        assert_eq!(
            g.check(&with("POST", Some("https://127.0.0.1:8080"), None)),
            Err(Refused::Origin)
        );
        assert_eq!(
            g.check(&with("GET", Some("http://localhost:8080"), None)),
            Err(Refused::Origin),
            "another of our names is another origin"
        );
        assert_eq!(g.check(&with("POST", None, None)), Err(Refused::Origin));
        assert_eq!(
            g.check(&with("GET", None, Some("cross-site"))),
            Err(Refused::CrossSite)
        );
        assert_eq!(
            g.check(&with("GET", None, Some("same-site"))),
            Err(Refused::CrossSite)
        );
    }

    #[test]
    fn the_token_comes_in_the_cookie_or_the_url_and_nothing_else_passes() {
        let g = local();
        let h = "127.0.0.1:8080";
        let with = |cookie, query| Asked {
            cookie,
            query_token: query,
            ..get(h)
        };
        assert_eq!(g.check(&with(None, Some(T))), Ok(Shown::Query));
        assert_eq!(g.check(&with(Some("a=b"), None)), Err(Refused::NoToken));
        assert_eq!(g.check(&with(None, None)), Err(Refused::NoToken));
        assert_eq!(
            g.check(&with(
                Some("ralph-serve-8080=0123456789abcdef0123456789abcdeX"),
                None
            )),
            Err(Refused::WrongToken)
        );
        // Another server's cookie on the same host is not this one's.
        assert_eq!(
            g.check(&with(
                Some("ralph-serve-9090=0123456789abcdef0123456789abcdef"),
                None
            )),
            Err(Refused::NoToken)
        );
        assert_eq!(
            g.check(&with(None, Some(&T[1..]))),
            Err(Refused::WrongToken)
        );
        assert_eq!(g.check(&with(None, Some(""))), Err(Refused::WrongToken));
        // A stale cookie and the right token in the URL: the URL wins.
        assert_eq!(
            g.check(&with(Some("ralph-serve-8080=old"), Some(T))),
            Ok(Shown::Query)
        );
    }

    #[test]
    fn a_cookie_planted_by_a_page_on_another_port_does_not_hide_ours() {
        // Cookies ignore ports: a page served on 127.0.0.1:3000 (a clone's
        // dev server) may set `ralph-serve-8080=x; path=/api`, which the
        // browser then sends before ours, on every request of the page.
        let g = local();
        let planted = format!("ralph-serve-8080=x; ralph-serve-8080={T}");
        let asked = Asked {
            cookie: Some(&planted),
            ..get("127.0.0.1:8080")
        };
        assert_eq!(g.check(&asked), Ok(Shown::Cookie));
        // Planted ones alone still pass nothing.
        let asked = Asked {
            cookie: Some("ralph-serve-8080=x; ralph-serve-8080=y"),
            ..get("127.0.0.1:8080")
        };
        assert_eq!(g.check(&asked), Err(Refused::WrongToken));
    }

    #[test]
    fn each_refusal_says_what_to_do_with_its_status() {
        assert_eq!(Refused::Host.status(), 421);
        assert_eq!(Refused::Origin.status(), 403);
        assert_eq!(Refused::NoToken.status(), 401);
        assert!(
            Refused::NoToken
                .to_string()
                .contains("open the address `ralph serve` printed")
        );
    }
}
