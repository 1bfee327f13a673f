//! hookd's Lua scripts, run by their SHA1 (`EVALSHA`) and sent whole
//! (`EVAL`) to a node that does not hold one yet.
//!
//! redis-rs's own `Script` loads a missing script with `SCRIPT LOAD`, which
//! a cluster client sends to every node and which fails unless every node
//! answers. So while one master hung, a shard on a healthy master whose
//! node lacked a script (a script hookd had not run there yet, a node
//! restarted, a replica just promoted: Redis does not replicate its script
//! cache) waited for the hung node's timeout and failed. `EVAL` goes only
//! where the script's keys live, and leaves the script cached there.

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, ServerErrorKind, ToRedisArgs};

/// A Lua script and its SHA1.
pub(crate) struct Script {
    body: String,
    hash: String,
}

impl Script {
    pub(crate) fn new(body: &str) -> Self {
        Self {
            hash: redis::Script::new(body).get_hash().to_string(),
            body: body.to_string(),
        }
    }

    /// A call of the script, its keys and arguments added next.
    pub(crate) fn prepare_invoke(&self) -> Invocation<'_> {
        Invocation {
            script: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// A call of a `Script`: `KEYS` and `ARGV`, in the order added.
pub(crate) struct Invocation<'a> {
    script: &'a Script,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Invocation<'_> {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// `EVALSHA`, then `EVAL` with the whole script if the node has no
    /// script of that SHA1.
    pub(crate) async fn invoke_async<T: FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
    ) -> RedisResult<T> {
        match self
            .command("EVALSHA", &self.script.hash)
            .query_async(conn)
            .await
        {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.command("EVAL", &self.script.body)
                    .query_async(conn)
                    .await
            }
            answer => answer,
        }
    }

    fn command(&self, verb: &str, script: &str) -> Cmd {
        let mut command = redis::cmd(verb);
        command
            .arg(script)
            .arg(self.keys.len())
            .arg(&*self.keys)
            .arg(&*self.args);
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_its_script_its_keys_then_its_arguments() {
        let script = Script::new("return KEYS[1]");
        let mut call = script.prepare_invoke();
        call.key("k").arg(7).arg("a");
        let packed = call.command("EVALSHA", &script.hash).get_packed_command();
        let expected = "*6\r\n$7\r\nEVALSHA\r\n$40\r\n4a2267357833227dd98abdedb8cf24b15a986445\r\n\
                        $1\r\n1\r\n$1\r\nk\r\n$1\r\n7\r\n$1\r\na\r\n";
        assert_eq!(std::str::from_utf8(&packed).unwrap(), expected);
    }
}
