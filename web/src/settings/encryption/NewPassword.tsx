// A new encryption password, typed twice; at least 10 characters (Argon2id makes guessing slow, not impossible).
import { useState } from 'react';

export const MIN_PASSWORD = 10;

export function useNewPassword(label = 'New encryption password') {
  const [a, setA] = useState('');
  const [b, setB] = useState('');
  const problem = a.length < MIN_PASSWORD ? `Use at least ${MIN_PASSWORD} characters.` : a !== b ? 'The two passwords differ.' : null;
  const fields = (
    <>
      <label>
        {label}{' '}
        <input
          type="password"
          autoComplete="new-password"
          required
          minLength={MIN_PASSWORD}
          value={a}
          onChange={(e) => setA(e.target.value)}
        />
      </label>
      <label>
        The same password again{' '}
        <input type="password" autoComplete="new-password" required value={b} onChange={(e) => setB(e.target.value)} />
      </label>
      <p className="muted">
        This password is not your sign-in password and never leaves this browser. Nobody can reset it: keep the recovery codes.
      </p>
    </>
  );
  return { fields, password: a, problem, clear: () => (setA(''), setB('')) };
}
