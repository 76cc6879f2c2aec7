declare module 'z32' {
  const z32: { encode(buf: Uint8Array): string; decode(s: string): Uint8Array; ALPHABET: string };
  export default z32;
}
