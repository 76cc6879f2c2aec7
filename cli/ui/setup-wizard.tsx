// The interactive face of `svcmail setup`: asks what the flags did not say, then runs the same
// lib/setup code the --non-interactive path runs, showing each step as it happens.
import { useRef, useState } from 'react';
import { Box, Text, render, useApp, useInput, type Key } from 'ink';
import { readConfigFile, type SetupInput, type SetupResult } from '../../lib/setup/index.js';
import { renderSetup, setupOrFail } from '../setup-flow.js';
import { EXIT } from '../output.js';

interface Question {
  key: 'domain' | 'host' | 'baseUrl' | 'authUrl' | 'authAudience' | 'authIssuer' | 'authSecret' | 'datastoreUrl' | 'redisUrl';
  label: string;
  hint: string;
  secret?: boolean;
  optional?: boolean;
  initial: (a: Answers) => string;
  check: (v: string) => string | null;
}

type Answers = Partial<Record<Question['key'], string>>;

const QUESTIONS: Question[] = [
  {
    key: 'domain',
    label: 'Mail domain',
    hint: 'the part after @, e.g. example.org',
    initial: () => '',
    check: (v) => (/^[a-z0-9.-]+\.[a-z]{2,}$/i.test(v) ? null : 'a domain such as example.org'),
  },
  {
    key: 'host',
    label: 'Host name of this server',
    hint: 'clients and the MX record point here',
    initial: (a) => (a.domain ? `mail.${a.domain}` : ''),
    check: (v) => (/^[a-z0-9.-]+$/i.test(v) ? null : 'a host name such as mail.example.org'),
  },
  {
    key: 'baseUrl',
    label: 'Public base URL',
    hint: 'where clients reach this server',
    initial: (a) => (a.host ? `https://${a.host}` : ''),
    check: (v) => (/^https?:\/\/\S+$/.test(v) ? null : 'an http(s) URL'),
  },
  {
    key: 'authUrl',
    label: 'Sign-in service URL',
    hint: 'mail:auth_server_url',
    initial: (a) => (a.domain ? `https://auth.${a.domain}` : ''),
    check: (v) => (/^https?:\/\/\S+$/.test(v) ? null : 'an http(s) URL'),
  },
  {
    key: 'authAudience',
    label: 'Token audience',
    hint: 'auth:options:audience, as the sign-in service issues it',
    initial: (a) => a.domain ?? '',
    check: (v) => (v ? null : 'required'),
  },
  {
    key: 'authIssuer',
    label: 'Token issuer',
    hint: 'auth:options:issuer: the sign-in service host',
    initial: (a) => hostOf(a.authUrl),
    check: (v) => (v ? null : 'required'),
  },
  {
    key: 'authSecret',
    label: 'Secret shared with the sign-in service',
    hint: 'at least 16 characters',
    secret: true,
    initial: () => '',
    check: (v) => (v.length >= 16 ? null : 'at least 16 characters'),
  },
  {
    key: 'datastoreUrl',
    label: 'PostgreSQL URL',
    hint: 'empty: the embedded SQLite database',
    optional: true,
    initial: () => '',
    check: (v) => (v === '' || /^postgres(ql)?:\/\//.test(v) ? null : 'postgres://… or empty'),
  },
  {
    key: 'redisUrl',
    label: 'Redis URL',
    hint: 'empty: one host, the embedded event channel',
    optional: true,
    initial: () => '',
    check: (v) => (v === '' || /^rediss?:\/\//.test(v) ? null : 'redis://… or empty'),
  },
];

function hostOf(url?: string): string {
  try {
    return new URL(url ?? '').hostname;
  } catch {
    return '';
  }
}

/** The answers the flags and the existing configuration file already give; the wizard asks only for the rest. */
function knownAnswers(input: SetupInput): Answers {
  const stored = readConfigFile(input.configFile);
  return {
    domain: input.domains[0],
    host: input.host ?? (stored.get('mail:host') as string | undefined),
    baseUrl: input.baseUrl ?? (stored.get('mail:base_url') as string | undefined),
    authAudience: input.authAudience ?? (stored.get('auth:options:audience') as string | undefined),
    authIssuer: input.authIssuer ?? (stored.get('auth:options:issuer') as string | undefined),
    redisUrl: input.redisUrl ?? (stored.has('mail:host') ? '' : undefined),
    authUrl: input.authUrl ?? (stored.get('mail:auth_server_url') as string | undefined),
    authSecret: input.authSecret ?? (stored.has('auth:secret') ? '(stored)' : undefined),
    datastoreUrl: input.datastoreUrl ?? (stored.has('mail:host') ? '' : undefined),
  };
}

/** The setup input from the flags and the answers (an empty answer: the setting's default; "(stored)": keep the stored secret). */
function setupInputOf(input: SetupInput, a: Answers): SetupInput {
  return {
    ...input,
    domains: [...new Set([a.domain!, ...input.domains])],
    host: a.host,
    authUrl: a.authUrl,
    baseUrl: a.baseUrl || undefined,
    authAudience: a.authAudience || undefined,
    authIssuer: a.authIssuer || undefined,
    redisUrl: a.redisUrl || undefined,
    authSecret: a.authSecret === '(stored)' ? undefined : a.authSecret,
    datastoreUrl: a.datastoreUrl || undefined,
  };
}

type KeyCommand = 'submit' | 'erase' | 'clear' | 'cancel' | 'keep' | 'ignore' | 'type';

/** What a key press asks for: an editing command, nothing, or 'type' for text to take character by character. */
function commandOf(ch: string, key: Key): KeyCommand {
  if (key.return) return 'submit';
  if (key.backspace || key.delete) return 'erase';
  if (key.ctrl && ch === 'u') return 'clear';
  if (key.escape || (key.ctrl && ch === 'c')) return 'cancel';
  if (key.rightArrow || key.tab || key.end) return 'keep';
  if (!ch || key.ctrl || key.meta) return 'ignore';
  return 'type';
}

/** Shows the questions already answered, a secret as stars and an empty answer as "(default)". */
function Answered({ questions, answers }: { questions: Question[]; answers: Answers }) {
  return (
    <>
      {questions.map((d) => (
        <Text key={d.key}>
          <Text color="green">✔ </Text>
          {d.label}: {d.secret ? '********' : answers[d.key] || '(default)'}
        </Text>
      ))}
    </>
  );
}

/** Shows the current question with its hint, what was typed (a proposed default dimmed) and the last refusal. */
function Prompt({ q, value, untouched, error }: { q: Question; value: string; untouched: boolean; error: string | null }) {
  return (
    <Box flexDirection="column">
      <Text>
        <Text color="cyan">? </Text>
        {q.label} <Text dimColor>({q.hint})</Text>
      </Text>
      <Text>
        › <Text dimColor={untouched}>{q.secret ? '*'.repeat(value.length) : value}</Text>
        <Text inverse> </Text>
        {untouched && <Text dimColor> Enter keeps it, typing replaces it, → edits it</Text>}
      </Text>
      {error && <Text color="red"> {error}</Text>}
    </Box>
  );
}

/** Shows the setup steps so far, the last one marked as running while the setup works. */
function StepLog({ log, working }: { log: string[]; working: boolean }) {
  return (
    <>
      {log.map((l, i) => (
        <Text key={i} dimColor={i < log.length - 1}>
          {i === log.length - 1 && working ? '… ' : '  '}
          {l}
        </Text>
      ))}
    </>
  );
}

/** Asks the questions the flags and the configuration file leave open, one at a time, then runs the setup showing its steps. */
function Wizard({ input, done }: { input: SetupInput; done: (code: number, text: string) => void }) {
  const { exit } = useApp();
  const known = knownAnswers(input);
  const todo = QUESTIONS.filter((q) => known[q.key] === undefined);
  const [answers, setAnswers] = useState<Answers>(known);
  const [index, setIndex] = useState(0);
  const [value, setShown] = useState(todo[0] ? todo[0].initial(known) : '');
  // Keys can arrive faster than React renders: the ref always holds what was typed so far.
  const typed = useRef(value);
  // A proposed default the user has not touched behaves like a placeholder that Enter accepts:
  // typing replaces it, Backspace or Ctrl-U clears it, → or Tab takes it for editing.
  const [untouched, setUntouched] = useState(value !== '');
  const pristine = useRef(untouched);
  const setValue = (v: string, proposed = false) => {
    typed.current = v;
    pristine.current = proposed && v !== '';
    setShown(v);
    setUntouched(pristine.current);
  };
  const typeChar = (c: string) => setValue(pristine.current ? c : typed.current + c);
  const erase = () => setValue(pristine.current ? '' : typed.current.slice(0, -1));
  const at = useRef(0);
  const soFar = useRef<Answers>(known);
  const [error, setError] = useState<string | null>(null);
  const [log, setLog] = useState<string[]>([]);
  const [phase, setPhase] = useState<'asking' | 'working' | 'done'>(todo.length ? 'asking' : 'working');
  const [started, setStarted] = useState(false);

  const finish = (code: number, text: string) => {
    setPhase('done');
    done(code, text);
    setTimeout(() => exit(), 50);
  };

  const start = (a: Answers) => {
    if (started) return;
    setStarted(true);
    setPhase('working');
    const final = setupInputOf(input, a);
    setupOrFail(final, (step, detail) => setLog((l) => [...l.slice(-12), `${step}: ${detail}`])).then(
      (r: SetupResult) => finish(0, renderSetup(r)),
      (e: Error) => finish(1, `svcmail: ${e.message}`),
    );
  };
  if (phase === 'working' && !started) setTimeout(() => start(answers), 0);

  /** Enter on the current question: validate, store, move on (or run the setup after the last). */
  const submit = (): boolean => {
    const i = at.current;
    const q = todo[i];
    if (!q) return false;
    const v = typed.current.trim();
    const problem = v === '' && !q.optional ? 'required' : q.check(v);
    if (problem) {
      setError(problem);
      return false;
    }
    const next = { ...soFar.current, [q.key]: v };
    soFar.current = next;
    setAnswers(next);
    setError(null);
    at.current = i + 1;
    if (i + 1 < todo.length) {
      setIndex(i + 1);
      setValue(todo[i + 1].initial(next), true);
    } else start(next);
    return true;
  };

  /** Keys can arrive several to a chunk (fast typing, paste, a terminal driver): takes them one by one. */
  const typeChunk = (ch: string) => {
    for (const c of ch) {
      if (c === '\r' || c === '\n') {
        if (!submit() || phase !== 'asking') return;
      } else if (c === '\x15')
        setValue(''); // Ctrl-U
      else if (c === '\x7f' || c === '\b') erase();
      else if (c >= ' ') typeChar(c);
    }
  };

  useInput((ch, key) => {
    if (phase !== 'asking' || !todo[at.current]) return;
    const command = commandOf(ch, key);
    if (command === 'submit') return void submit();
    if (command === 'erase') return erase();
    if (command === 'clear') return setValue('');
    if (command === 'cancel') return finish(EXIT.cancelled, 'setup cancelled; nothing was written');
    if (command === 'keep') return setValue(typed.current);
    if (command === 'type') typeChunk(ch);
  });

  const q = todo[index];
  return (
    <Box flexDirection="column">
      <Text bold>svcmail setup</Text>
      <Text dimColor>configuration file: {input.configFile}</Text>
      <Answered questions={todo.slice(0, phase === 'asking' ? index : todo.length)} answers={answers} />
      {phase === 'asking' && q && <Prompt q={q} value={value} untouched={untouched} error={error} />}
      {phase !== 'asking' && <StepLog log={log} working={phase === 'working'} />}
    </Box>
  );
}

/** Runs the wizard; the full result is printed after ink lets go of the terminal. */
export async function runWizard(input: SetupInput): Promise<number> {
  let code = 1;
  let text = '';
  const app = render(
    <Wizard
      input={input}
      done={(c, t) => {
        code = c;
        text = t;
      }}
    />,
    { exitOnCtrlC: false },
  );
  await app.waitUntilExit();
  process.stdout.write(`\n${text}\n`);
  return code;
}
