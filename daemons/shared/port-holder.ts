import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// Who holds a listening TCP port, for the one-line error of a daemon that cannot listen: Linux's
// /proc/net/tcp{,6} give the listening socket's inode, /proc/<pid>/fd the process that has it open.
// Best effort: null when /proc is missing or the holder belongs to a user this process cannot see.

const LISTEN = '0A';

function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== LISTEN) continue;
      if (Number.parseInt(cols[1].split(':')[1] ?? '', 16) === port) inodes.add(cols[9]);
    }
  }
  return inodes;
}

/** "pid 1234 (node /usr/lib/svcmail/bin/svcmail-push.js)", or null when it cannot be found. */
export function portHolder(port: number): string | null {
  const inodes = listeningInodes(port);
  if (!inodes.size) return null;
  const wanted = new Set([...inodes].map((i) => `socket:[${i}]`));
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (!wanted.has(target)) continue;
      let cmd = '';
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ').slice(0, 120);
      } catch {
        /* gone meanwhile */
      }
      return `pid ${pid}${cmd ? ` (${cmd})` : ''}`;
    }
  }
  return null;
}
