#if canImport(Glibc)
import Glibc
#endif

/// Entry point: one subcommand per measurement, each printing one `result ...` line of
/// `key=value` pairs that bench/run collects into its table.
enum RelayBench {
    static let usage = """
    usage: relaybench <command> [options]
      serve      --port P [--host 127.0.0.1] [--tls --cert FILE --key FILE]
                 upstream: first byte 'S' = sink (acks every 16 MiB), anything else = echo;
                 --tls runs the same inside TLS (one leading cleartext 'P' is dropped)
      freeport   [--count N]                       print N distinct free loopback TCP ports
      throughput --connect H:P [--proxy H:P] [--mode connect|plain] [--bytes 2G] [--seconds 5] [--pid PID] [--streams 1]
      latency    --connect H:P [--proxy H:P] [--mode connect|plain] [--count 20000] [--seconds 5]
      rate       --connect H:P [--proxy H:P] [--mode connect|plain] [--clients 16] [--seconds 5] [--pid PID]
                 [--auth none|basic|digest|ntlm|negotiate --user U --password P] [--digest-reuse-nonce]
                 a fresh connection and the scheme's whole handshake per tunnel; negotiate uses the
                 ccache in KRB5CCNAME and service HTTP@<proxy host>; digest answers a 407 challenge
                 per tunnel unless --digest-reuse-nonce (one nonce per client thread, nc counting up);
                 --pid adds proxy_cpu_us, the proxy's CPU time per tunnel
      idle       --connect H:P [--proxy H:P] [--mode connect|plain] [--tunnels 10000] --pid PID [--settle 2]
    TLS (throughput, rate, idle): --proxy-tls (TLS to the proxy: HTTPS proxy, haproxy ssl) or
                 --upstream-tls [--sni NAME] [--preamble] (end-to-end TLS inside the tunnel;
                 --preamble sends one cleartext 'P' first so a relay does not see TLS);
                 [--tls-version 1.2|1.3] [--resume] (each client thread resumes its session);
                 rate --handshake-only: connect, proxy TLS handshake, close
    common: --label NAME (copied into the result line)
    --proxy omitted = direct to --connect. --mode connect sends an HTTP CONNECT to the proxy;
    --mode plain means the proxy port itself forwards to the upstream (haproxy mode tcp, dynrelay forward).
    """

    /// Parses the command line, runs one subcommand, and exits with 0, 1 (measurement failed) or 64 (usage).
    static func main() {
        var args = Array(CommandLine.arguments.dropFirst())
        guard let command = args.first else {
            fail(usage: usage)
        }
        args.removeFirst()
        raiseFileLimit()
        signal(SIGPIPE, SIG_IGN)
        do {
            let options = try Options(args)
            switch command {
            case "serve": options.flag("tls") ? try TLSEchoServer.run(options) : try EchoServer.run(options)
            case "freeport": try FreePort.run(options)
            case "throughput": try Throughput.run(options)
            case "latency": try Latency.run(options)
            case "rate": try Rate.run(options)
            case "idle": try Idle.run(options)
            case "-h", "--help", "help":
                print(usage)
            default:
                fail(usage: "unknown command \(command)\n\(usage)")
            }
        } catch let error as UsageError {
            fail(usage: "relaybench: \(error.message)\n\(usage)")
        } catch {
            printError("relaybench \(command): \(error)\n")
            exit(1)
        }
    }

    private static func fail(usage text: String) -> Never {
        printError(text + "\n")
        exit(64)
    }

    /// 10k idle tunnels need 10k descriptors here; the hard limit is whatever bench/run set.
    private static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
