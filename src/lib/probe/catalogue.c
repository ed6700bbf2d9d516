/* The probe catalogue: one row per escape attempt, with what it tries,
 * how it is judged and where the attack comes from. docs/probes.md is
 * generated from this table (`airlock probe --list`). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/internal.h"
#include "probe/probes.h"

#define N "network"
#define F "filesystem"
#define P "privileges"
#define R "resources"
#define S "persistence"
#define C "credentials"
#define PF PR_PREFLIGHT

/* clang-format off */
const pr_probe pr_catalogue[] = {
 {"net.tcp-public", N, "TCP to 1.1.1.1:443 ignoring the proxy variables", "a completed handshake escapes; ENETUNREACH blocks; a timeout is inconclusive", "netns: network_namespaces(7); docs/design.md §2", pr_net_tcp_public, PF, 0},
 {"net.tcp-private", N, "TCP to 10.0.0.1:80 (a private range)", "as net.tcp-public", "network_namespaces(7)", pr_net_tcp_private, 0, 0},
 {"net.metadata-direct", N, "TCP to the cloud metadata address 169.254.169.254:80", "as net.tcp-public", "Capital One 2019 SSRF to IMDS; AWS IMDSv2 docs", pr_net_metadata_direct, 0, 0},
 {"net.dns-udp-public", N, "a UDP DNS query for a marker name to 8.8.8.8:53", "sendto succeeding escapes (the datagram had a route)", "DNS exfiltration: MITRE ATT&CK T1071.004", pr_net_dns_udp_public, 0, 0},
 {"net.dns-tcp-public", N, "TCP DNS to 9.9.9.9:53", "as net.tcp-public", "RFC 7766 (DNS over TCP)", pr_net_dns_tcp_public, 0, 0},
 {"net.dns-host-resolver", N, "a DNS query to the host's loopback resolver (the canary resolver on 127.0.0.1)", "host side: the resolver's log must not hold the marker name; an answer escapes", "systemd-resolved stub 127.0.0.53; T1071.004", pr_net_dns_host_resolver, PR_OUTER, 0},
 {"net.ipv6-public", N, "TCP to [2606:4700:4700::1111]:443", "as net.tcp-public", "ipv6(7)", pr_net_ipv6_public, 0, 0},
 {"net.ipv6-canary", N, "TCP to the host canary on [::1]", "host side: the canary must log nothing; a canary answer escapes", "ipv6(7)", pr_net_ipv6_canary, PR_OUTER, 0},
 {"net.canary-tcp", N, "TCP to the host canary on 127.0.0.1 (a host-loopback service)", "host side: the canary must log nothing; a canary answer escapes", "CVE-2020-15257 (host-netns abstract sockets)", pr_net_canary_tcp, PF | PR_OUTER, 0},
 {"net.canary-udp", N, "a UDP datagram to the host canary on 127.0.0.1", "host side: the canary's log", "udp(7)", pr_net_canary_udp, PR_OUTER, 0},
 {"net.loopback-scan", N, "TCP to 27 common service ports on 127.0.0.1 (ssh, docker 2375, redis, postgres, kubelet 10250, ...) and the canary", "any open port escapes (the proxy port 3128 is not scanned)", "Docker API on tcp/2375; kubelet 10250 writeups", pr_net_loopback_scan, 0, 0},
 {"net.host-gateway", N, "TCP to the default route's gateway (on a container bridge: the host itself) at the canary's port", "no default route or EHOSTUNREACH blocks; a handshake, or a reset from the gateway's TCP stack, escapes (the host's 0.0.0.0 services are reachable); a timeout is inconclusive", "Docker bridge networks: `internal` filters forwarding, not the host's INPUT", pr_net_host_gateway, 0, 6000},
 {"net.raw-socket", N, "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)", "a socket escapes", "raw(7); the seccomp filter (docs/sandbox.md)", pr_net_raw_socket, 0, 0},
 {"net.packet-socket", N, "socket(AF_PACKET, SOCK_RAW)", "a socket escapes", "packet(7); CVE-2020-14386, CVE-2017-7308", pr_net_packet_socket, 0, 0},
 {"net.abstract-unix", N, "connect to the host canary's abstract unix socket (as X11 @/tmp/.X11-unix/X0 or D-Bus)", "host side: the canary must log nothing; a connect escapes", "unix(7); CVE-2020-15257 (containerd-shim abstract socket)", pr_net_abstract_unix, PR_OUTER, 0},
 {"net.host-unix-list", N, "look for the host's abstract sockets (canary, X11, D-Bus) in /proc/net/unix", "any host socket listed escapes", "unix(7)", pr_net_host_unix_list, 0, 0},
 {"net.netlink", N, "RTM_NEWLINK on lo (same MTU: changes nothing) over rtnetlink", "an acknowledgement without error escapes (CAP_NET_ADMIN)", "rtnetlink(7)", pr_net_netlink, 0, 0},
 {"net.proxy-denied-name", N, "CONNECT <marker>.airlock-probe.test:443 through the proxy (DNS tunnelling)", "403 blocks; host side: the proxy's resolver (the canary) must never see the name", "resolve only after the allow decision (src/lib/proxy/README.md, docs/policy.md `network`); dnscat2", pr_net_proxy_denied_name, PF | PR_OUTER, 0},
 {"net.proxy-plain-http", N, "absolute-form GET http://<marker>.airlock-probe.test/ through the proxy", "403 blocks; the resolver must not see the name", "RFC 9112 §3.2.2", pr_net_proxy_plain_http, PR_OUTER, 0},
 {"net.proxy-ip-literal", N, "CONNECT 1.1.1.1:443 (an IP literal)", "403 blocks; 200 or a dial (502) escapes", "RFC 9110 §9.3.6", pr_net_proxy_ip_literal, 0, 0},
 {"net.proxy-metadata", N, "CONNECT 169.254.169.254:80 through the proxy", "as net.proxy-ip-literal", "SSRF to IMDS (Capital One 2019)", pr_net_proxy_metadata, 0, 0},
 {"net.proxy-metadata-name", N, "GET http://metadata.google.internal/computeMetadata/v1/ through the proxy", "as net.proxy-ip-literal", "GCP metadata server docs", pr_net_proxy_metadata_name, 0, 0},
 {"net.proxy-mapped-v6", N, "CONNECT [::ffff:169.254.169.254]:80 (IPv4 embedded in IPv6)", "as net.proxy-ip-literal", "RFC 4291 §2.5.5.2", pr_net_proxy_mapped_v6, 0, 0},
 {"net.proxy-loopback", N, "CONNECT 127.0.0.1:<canary> through the proxy (a host service via the proxy)", "as net.proxy-ip-literal; the canary must log nothing", "SSRF to localhost services", pr_net_proxy_loopback, PR_OUTER, 0},
 {"net.proxy-wrong-port", N, "CONNECT to an allowed host on another port", "as net.proxy-ip-literal", "exact host:port (src/lib/proxy/README.md, docs/policy.md `network`)", pr_net_proxy_wrong_port, 0, 0},
 {"net.proxy-sni-mismatch", N, "CONNECT to an allowed `tls: true` host, then a ClientHello whose SNI is another name (domain fronting)", "the tunnel must be cut without an answer; bytes back escape; an unreachable allowed host is inconclusive", "RFC 6066 §3; domain fronting (Fifield et al. 2015)", pr_net_proxy_sni_mismatch, 0, 0},

 {"fs.write-root", F, "create a zero-byte file in /", "EROFS/EACCES blocks; creation escapes (removed at once)", "mount_namespaces(7)", pr_fs_write_root, 0, 0},
 {"fs.write-etc", F, "create a zero-byte file in /etc", "as fs.write-root", "mount_namespaces(7)", pr_fs_write_etc, PF, 0},
 {"fs.write-usr", F, "create a zero-byte file in /usr", "as fs.write-root", "mount_namespaces(7)", pr_fs_write_usr, 0, 0},
 {"fs.write-var-tmp", F, "create a zero-byte file in /var/tmp", "as fs.write-root", "FHS 3.0 §5.15 (persists across reboots)", pr_fs_write_var_tmp, 0, 0},
 {"fs.write-home", F, "create a zero-byte file in the invoker's $HOME", "as fs.write-root", "docs/design.md §2 (no /home, /root)", pr_fs_write_home, 0, 0},
 {"fs.host-shm", F, "look for a canary the host put in its /dev/shm", "visible escapes; /dev/shm must be private", "shm_overview(7)", pr_fs_host_shm, 0, 0},
 {"fs.host-tmp", F, "read a canary file the host put in a temporary directory", "readable escapes", "docs/design.md §2", pr_fs_host_tmp_canary, 0, 0},
 {"fs.read-ssh", F, "list the invoker's ~/.ssh", "present escapes; ENOENT blocks", "T1552.004 (private keys)", pr_fs_read_ssh, PF, 0},
 {"fs.read-aws", F, "list the invoker's ~/.aws", "as fs.read-ssh", "T1552.001 (credentials in files)", pr_fs_read_aws, 0, 0},
 {"fs.read-kube", F, "read the invoker's ~/.kube/config", "as fs.read-ssh", "T1552.001", pr_fs_read_kube, 0, 0},
 {"fs.read-gh", F, "list the invoker's ~/.config/gh (GitHub CLI tokens)", "as fs.read-ssh", "T1552.001", pr_fs_read_gh, 0, 0},
 {"fs.read-git-credentials", F, "read the invoker's ~/.git-credentials", "as fs.read-ssh", "git-credential-store(1)", pr_fs_read_git_credentials, 0, 0},
 {"fs.read-netrc", F, "read the invoker's ~/.netrc", "as fs.read-ssh", "netrc(5)", pr_fs_read_netrc, 0, 0},
 {"fs.read-docker-config", F, "read the invoker's ~/.docker/config.json (registry auth)", "as fs.read-ssh", "docker login docs", pr_fs_read_docker_config, 0, 0},
 {"fs.read-run-secrets", F, "list /run/secrets or /var/run/secrets", "present, or the host's /run visible, escapes", "Docker/Kubernetes secrets mounts", pr_fs_read_run_secrets, 0, 0},
 {"fs.container-sockets", F, "look for docker, containerd, podman, cri-o sockets and /run, /var/run", "any socket or the host's /run escapes", "Docker socket escape (OWASP Docker Top 10 D-4)", pr_fs_container_sockets, 0, 0},
 {"fs.ro-path-sockets", F, "connect(2) to every Unix socket under every `filesystem.ro_paths` and `sensitive_ro_paths` entry (a walk of at most 20000 entries, 24 levels)", "a connect that succeeds escapes (a read-only bind does not stop connect); outside the sandbox it reaches a socket the host made in its canary directory (the control)", "unix(7); issue 27", pr_fs_ro_path_sockets, 0, 0},
 {"fs.mountinfo", F, "read /proc/self/mountinfo for the invoker's home, the host canary directory, or a /home, /root, /run, /var, /boot, /sys mount", "the home or canary named, or such a mount in view with entries, escapes", "proc(5) mountinfo", pr_fs_mountinfo, 0, 0},
 {"fs.core-pattern", F, "open /proc/sys/kernel/core_pattern for writing (never written)", "opened escapes", "core(5); CVE-2022-0492 class of host code execution", pr_fs_core_pattern, 0, 0},
 {"fs.sysctl-write", F, "open /proc/sys/kernel/modprobe (else panic, vm/drop_caches, hostname) for writing (never written)", "opened escapes", "proc_sys_kernel(5); modprobe_path overwrite writeups", pr_fs_sysctl_write, 0, 0},
 {"fs.binfmt-misc", F, "mount binfmt_misc (in a private mount namespace) and open its register for writing", "opened escapes", "binfmt_misc kernel docs; 'shadow binfmt' persistence", pr_fs_binfmt_misc, 0, 0},
 {"fs.proc-sensitive", F, "open /proc/sysrq-trigger for writing (never written); read /proc/kallsyms, timer_list, keys, sched_debug, kcore", "opened, or any of them non-empty, escapes", "proc(5); sysrq kernel docs; KASLR leaks via kallsyms", pr_fs_proc_sensitive, 0, 0},
 {"fs.release-agent", F, "open a cgroup v1 release_agent for writing (never written)", "opened escapes", "CVE-2022-0492; Felix Wilhelm's release_agent escape", pr_fs_release_agent, 0, 0},
 {"fs.mknod", F, "mknod a /dev/mem character node in the temporary directory", "creation escapes", "mknod(2); capabilities(7) CAP_MKNOD", pr_fs_mknod, 0, 0},
 {"fs.dev-nodes", F, "look in /dev for block devices, mem, kmsg, port, fuse, kvm", "any present escapes", "docs/design.md §2 (a minimal /dev)", pr_fs_dev_nodes, 0, 0},
 {"fs.self-exe", F, "open /proc/self/exe (the airlock binary) for writing, check its mount", "opened or writable escapes; a read-only mount blocks", "CVE-2019-5736 (runc)", pr_fs_self_exe, 0, 0},
 {"fs.inherited-fds", F, "use an fd the launcher deliberately left open", "readable escapes", "CVE-2024-21626 (runc leaked fd); bubblewrap lessons", pr_fs_inherited_fds, PF, 0},
 {"fs.stdio-dir", F, "use the host directory the launcher handed in as stderr: `openat(2, \"secret\")`, `openat(2, \"..\")`", "a directory or O_PATH descriptor on fds 0-2 escapes (the sandbox replaces them with /dev/null: docs/sandbox.md)", "openat(2) O_PATH", pr_fs_stdio_dir, 0, 0},
 {"fs.open-by-handle", F, "name_to_handle_at + open_by_handle_at on /usr", "a handle opened escapes", "open_by_handle_at(2); 'shocker' (2014)", pr_fs_open_by_handle, 0, 0},
 {"fs.tiocsti", F, "ioctl(TIOCSTI) on a terminal", "success escapes", "ioctl_tty(2); CVE-2016-7545, CVE-2017-5226 (bubblewrap)", pr_fs_tiocsti, 0, 0},
 {"fs.tioclinux", F, "ioctl(TIOCLINUX, TIOCL_SETSEL) on a terminal", "reaching the tty layer escapes; EPERM blocks", "ioctl_console(2); CVE-2023-1523", pr_fs_tioclinux, 0, 0},
 {"fs.hardlink-setuid", F, "hard-link a set-uid binary into a writable directory", "a link escapes", "proc_sys_fs(5) protected_hardlinks", pr_fs_hardlink_setuid, 0, 0},
 {"fs.symlink-escape", F, "a workspace symlink to the host canary file", "the symlink resolving escapes", "CVE-2018-15664 (docker cp symlink race)", pr_fs_symlink_escape, 0, 0},
 {"fs.etc-curated", F, "list /etc: only the curated entries, none writable, no host secret (shadow, SSH host keys, sudoers, ssl/private) readable; statfs of /", "an extra entry, a writable one, a readable secret, or / not a small read-only tmpfs escapes", "docs/sandbox.md Filesystem step 3; T1552.004", pr_fs_etc_curated, 0, 0},

 {"priv.caps", P, "read the Cap* lines of /proc/self/status", "any non-zero set escapes", "capabilities(7)", pr_priv_caps, PF, 0},
 {"priv.no-new-privs", P, "read NoNewPrivs", "0 escapes", "prctl(2) PR_SET_NO_NEW_PRIVS", pr_priv_nnp, PF, 0},
 {"priv.seccomp", P, "read Seccomp", "anything but 2 (filter) escapes", "seccomp(2)", pr_priv_seccomp, PF, 0},
 {"priv.uid-map", P, "read /proc/self/uid_map", "host uid 0 mapped escapes", "user_namespaces(7)", pr_priv_uid_map, PF, 0},
 {"priv.setuid", P, "find a set-uid binary; check NoNewPrivs and the mount's nosuid", "elevation possible escapes", "execve(2) set-user-ID; mount(8) nosuid", pr_priv_setuid, 0, 0},
 {"priv.file-caps", P, "find a file-capability binary (ping, newuidmap); check NoNewPrivs and nosuid", "elevation possible escapes", "capabilities(7) file capabilities", pr_priv_file_caps, 0, 0},
 {"priv.ptrace", P, "PTRACE_SEIZE the parent process (detached at once)", "success escapes", "ptrace(2); CVE-2019-13272", pr_priv_ptrace, 0, 0},
 {"priv.mount", P, "mount a tmpfs (in a private mount namespace when one can be made)", "success escapes", "mount(2)", pr_priv_mount, 0, 0},
 {"priv.userns", P, "unshare(CLONE_NEWUSER): a nested user namespace", "success escapes", "user_namespaces(7); CVE-2022-0185, CVE-2023-32233", pr_priv_userns, PF, 0},
 {"priv.clone-ns", P, "clone(2) with CLONE_NEWNET|CLONE_NEWUTS", "success escapes", "clone(2)", pr_priv_clone_ns, 0, 0},
 {"priv.setns", P, "setns into pid 1's mount namespace", "success escapes", "setns(2)", pr_priv_setns, 0, 0},
 {"priv.bpf", P, "bpf(BPF_MAP_CREATE)", "a map escapes", "bpf(2); CVE-2021-3490", pr_priv_bpf, 0, 0},
 {"priv.keyctl", P, "keyctl(KEYCTL_GET_KEYRING_ID) of the session keyring", "reaching the keyrings escapes", "keyctl(2); CVE-2016-0728", pr_priv_keyctl, 0, 0},
 {"priv.perf", P, "perf_event_open of a software counter on itself", "a counter escapes", "perf_event_open(2); CVE-2013-2094", pr_priv_perf, 0, 0},
 {"priv.userfaultfd", P, "userfaultfd(UFFD_USER_MODE_ONLY)", "an fd escapes", "userfaultfd(2); race-widening in kernel exploits", pr_priv_userfaultfd, 0, 0},
 {"priv.io-uring", P, "io_uring_setup", "a ring escapes", "io_uring(7); Google kCTF 2023 (60% of submissions)", pr_priv_io_uring, 0, 0},
 {"priv.module", P, "init_module with an empty image (nothing can load)", "any errno but EPERM escapes", "init_module(2)", pr_priv_module, 0, 0},
 {"priv.personality", P, "personality(ADDR_NO_RANDOMIZE|READ_IMPLIES_EXEC)", "accepted escapes", "personality(2); CVE-2009-1895", pr_priv_personality, 0, 0},
 {"priv.x32", P, "an x32-ABI syscall (getpid | 0x40000000)", "death by SIGSYS blocks; returning escapes", "syscall(2); seccomp(2) arch checks", pr_priv_x32, PF | PR_SIGSYS_BLOCKS, 0},
 {"priv.i386", P, "an i386 syscall through int 0x80", "death by SIGSYS blocks; returning escapes", "CVE-2010-3081, CVE-2009-0835 (seccomp via int 0x80)", pr_priv_i386, PR_SIGSYS_BLOCKS | PR_SEGV_NOABI, 0},
 {"priv.syscall-sweep", P, "syscalls 425-442 (io_uring_*, the mount API, clone3, pidfd_getfd, process_madvise, mount_setattr) with invalid arguments", "any answer but EPERM (clone3: ENOSYS) escapes", "syscalls(2); seccomp(2)", pr_priv_syscall_sweep, 0, 0},
 {"priv.syscall-new", P, "syscalls 457-469 (statmount, listmount, *xattrat, open_tree_attr, file_getattr/setattr: newer than the build's libseccomp) with invalid arguments", "any answer but ENOSYS escapes (on a kernel without them the host control answers ENOSYS too)", "syscalls(2); seccomp(2); docs/sandbox.md Privileges step 5", pr_priv_syscall_new, 0, 0},

 {"res.pids", R, "fork up to the pids limit + 16 (capped at 2048) processes", "all forks succeeding escapes", "pids cgroup docs; fork bomb", pr_res_pids, 0, 10000},
 {"res.memory", R, "allocate and touch the memory limit + 64 MiB (when the limit is <= 448 MiB)", "ENOMEM or death by SIGKILL blocks; success escapes; larger limits are judged by RLIMIT_DATA or the sandbox's cgroup report", "memory cgroup (v2 memory.max, v1 memory.limit_in_bytes); setrlimit(2)", pr_res_memory, PR_KILL_BLOCKS | PR_OUTER, 15000},
 {"res.disk-workspace", R, "fill /workspace (when its cap is <= 240 MiB), check it is a capped tmpfs", "not tmpfs, larger than the policy, or a fill past the cap escapes", "tmpfs(5) size=", pr_res_disk_workspace, 0, 15000},
 {"res.disk-tmp", R, "fill /tmp the same way", "as res.disk-workspace", "tmpfs(5)", pr_res_disk_tmp, 0, 15000},
 {"res.cpu-priority", R, "SCHED_FIFO, then nice -5", "either granted escapes", "sched(7); CAP_SYS_NICE", pr_res_cpu_priority, 0, 0},
 {"res.nofile", R, "read and try to raise the RLIMIT_NOFILE hard limit", "a hard limit above the policy or a raise escapes", "getrlimit(2)", pr_res_nofile, PF, 0},
 {"res.linger", R, "setsid + double fork: a process that tries to outlive the run (exits by itself within 30 s)", "host side: a process of that name alive after the run escapes (and is killed)", "daemon(7); pid_namespaces(7)", pr_res_linger, PF | PR_OUTER, 0},

 {"persist.host-files", S, "write a marker file into /workspace, /tmp, /dev/shm, /var/tmp, $HOME, the invoker's home and cwd", "host side: the marker in any of those host places after the run escapes (and is removed)", "docs/design.md §2 (tmpfs gone with the namespace)", pr_persist_host_files, PR_OUTER, 0},
 {"persist.autostart", S, "create files in /etc/cron.d, /etc/profile.d, /etc/systemd/system, ~/.config/autostart, systemd user units, cron spool", "any creation escapes (removed at once)", "MITRE ATT&CK T1053.003, T1543.002, T1547.013", pr_persist_autostart, 0, 0},

 {"cred.env-allowlist", C, "list the environment's variable names", "a name beyond PATH, LANG, TERM, HOME, USER, LOGNAME, TMPDIR, the proxy variables and process.env_pass escapes", "docs/design.md §2 secrets", pr_cred_env_allowlist, PF, 0},
 {"cred.run-tokens", C, "look for the run's forge tokens in the environment and command line of every process and in every file of the workspace, /tmp, /run/airlock and /dev/shm", "host side: a digest (SHA-256 with the run's nonce) of a token-like string inside equal to a run token's escapes; the tokens never cross, not even hashed; an incomplete scan without a match is inconclusive", "sealed credentials (docs/gateway.md); T1552.001, T1552.007", pr_cred_run_tokens, PF | PR_OUTER, 8000},
 {"cred.host-env", C, "look for any host environment value in our environment and every /proc/*/environ", "a match (by SHA-256 prefix; values never cross) escapes", "proc(5) environ; T1552.007", pr_cred_host_env, 0, 0},
 {"cred.cmdline", C, "look for token-shaped strings (ghp_, github_pat_, glpat-, AKIA, ...) or host values on every /proc/*/cmdline", "any escapes", "GitHub token formats (2021 blog); proc(5) cmdline", pr_cred_cmdline, 0, 0},
 {"cred.host-procs", C, "look for the supervisor (host pid and start time) in /proc", "visible escapes", "pid_namespaces(7)", pr_cred_host_procs, 0, 0},
 {"cred.supervisor-memory", C, "process_vm_readv and /proc/PID/mem of the supervisor (or the sandbox init, its clone)", "any bytes read escape", "process_vm_readv(2); proc(5) mem", pr_cred_parent_memory, 0, 0},
};
/* clang-format on */
const size_t pr_catalogue_len = AL_ARRAY_SIZE(pr_catalogue);

bool pr_selected(const pr_probe *p, bool preflight, const char *only)
{
  if (preflight && !(p->flags & PR_PREFLIGHT))
    return false;
  return !only || !only[0] || strcmp(only, p->group) == 0;
}

const char *al_probe_verdict_name(al_probe_verdict v)
{
  switch (v) {
  case AL_PROBE_BLOCKED:
    return "blocked";
  case AL_PROBE_ESCAPED:
    return "escaped";
  case AL_PROBE_INCONCLUSIVE:
    return "inconclusive";
  default:
    return "?";
  }
}

void pr_set(pr_result *r, int verdict, const char *fmt, ...)
{
  r->verdict = verdict;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->evidence, sizeof r->evidence, fmt, ap);
  va_end(ap);
  for (char *p = r->evidence; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
}

void pr_marker(const pr_ctx *ctx, const char *id, char *out, size_t len)
{
  snprintf(out, len, "alprobe-%s-%s", id, ctx->nonce);
  for (char *p = out; *p; p++)
    if (*p == '.')
      *p = '-';
}

const char *pr_errname(int e)
{
  const char *n = strerrorname_np(e);
  return n ? n : "E?";
}

int pr_in_child(int (*fn)(void *arg), void *arg, int timeout_ms)
{
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0)
    return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pfd[0]);
    close(pfd[1]);
    return -e;
  }
  if (pid == 0) {
    close(pfd[0]);
    setpgid(0, 0);
    int rc = fn(arg);
    (void)!write(pfd[1], &rc, sizeof rc);
    _exit(0);
  }
  close(pfd[1]);
  int rc = -ETIMEDOUT;
  bool got = false;
  struct pollfd p = {.fd = pfd[0], .events = POLLIN};
  if (poll(&p, 1, timeout_ms) == 1) {
    int v;
    if (read(pfd[0], &v, sizeof v) == (ssize_t)sizeof v) {
      rc = v;
      got = true;
    }
  }
  bool timed_out = !got && rc == -ETIMEDOUT && !(p.revents & (POLLIN | POLLHUP));
  close(pfd[0]);
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
    ;
  if (!got && !timed_out)
    rc = WIFSIGNALED(ws) ? -(128 + WTERMSIG(ws)) : -EIO;
  return rc;
}

void al_probe_catalogue_markdown(FILE *f)
{
  const char *group = "";
  for (size_t i = 0; i < pr_catalogue_len; i++) {
    const pr_probe *p = &pr_catalogue[i];
    if (strcmp(group, p->group) != 0) {
      group = p->group;
      fprintf(f, "\n### %s\n\n| id | tries | judged | source |\n|---|---|---|---|\n", group);
    }
    fprintf(f, "| `%s`%s | %s | %s | %s |\n", p->id, (p->flags & PR_PREFLIGHT) ? " ⚑" : "",
            p->tries, p->judged, p->source);
  }
}
