// A stand-in for a standalone MongoDB server (no replica set), speaking the wire protocol on
// loopback: enough of it for the real driver (through mongoose) to connect, select the server and
// ask it `hello`, `ping` and `buildInfo` — so the document backend's start-up refusal of a standalone
// server is tested end to end. No MongoDB server can be installed on these machines
// (../shared/TESTING.md); this double answers nothing else (any other command: an error).
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import mongoose from 'mongoose';

const { BSON } = mongoose.mongo;

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

/** What a standalone MongoDB 7.0 answers to hello: writable primary, no setName. */
function helloReply(): Record<string, unknown> {
  return {
    helloOk: true,
    isWritablePrimary: true,
    ismaster: true,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: 1,
    minWireVersion: 0,
    maxWireVersion: 21,
    readOnly: false,
    ok: 1,
  };
}

function answer(cmd: Record<string, unknown>, commands: string[]): Record<string, unknown> {
  const name = Object.keys(cmd)[0] ?? '';
  commands.push(name);
  if (['hello', 'isMaster', 'ismaster'].includes(name)) return helloReply();
  if (name === 'ping' || name === 'endSessions') return { ok: 1 };
  if (name === 'buildInfo' || name === 'buildinfo') return { version: '7.0.0', ok: 1 };
  return { ok: 0, code: 59, codeName: 'CommandNotFound', errmsg: `${name}: not answered by the test double` };
}

function frame(opCode: number, responseTo: number, body: Buffer): Buffer {
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + body.length, 0);
  header.writeInt32LE(Math.floor(Math.random() * 2 ** 30), 4);
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(opCode, 12);
  return Buffer.concat([header, body]);
}

/** One message: OP_QUERY (the legacy handshake) answered with OP_REPLY, OP_MSG with OP_MSG. */
function reply(msg: Buffer, commands: string[]): Buffer | null {
  const requestId = msg.readInt32LE(4);
  const opCode = msg.readInt32LE(12);
  if (opCode === OP_MSG) {
    // flagBits, then section kind 0: the command document.
    const cmd = BSON.deserialize(msg.subarray(21, 21 + msg.readInt32LE(21)));
    const doc = Buffer.from(BSON.serialize(answer(cmd, commands)));
    return frame(OP_MSG, requestId, Buffer.concat([Buffer.alloc(4), Buffer.from([0]), doc]));
  }
  if (opCode === OP_QUERY) {
    const nameEnd = msg.indexOf(0, 20);
    const at = nameEnd + 1 + 8;
    const cmd = BSON.deserialize(msg.subarray(at, at + msg.readInt32LE(at)));
    const doc = Buffer.from(BSON.serialize(answer(cmd, commands)));
    const head = Buffer.alloc(20);
    head.writeInt32LE(1, 16); // numberReturned
    return frame(OP_REPLY, requestId, Buffer.concat([head, doc]));
  }
  return null;
}

function serve(socket: Socket, commands: string[]): void {
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
      const msg = pending.subarray(0, pending.readInt32LE(0));
      pending = pending.subarray(msg.length);
      const out = reply(msg, commands);
      if (out) socket.write(out);
      else socket.destroy();
    }
  });
  socket.on('error', () => undefined);
}

export interface StandaloneMongo {
  url: string;
  /** The commands it was asked, in order. */
  commands: string[];
  close(): Promise<void>;
}

export async function startStandaloneMongo(): Promise<StandaloneMongo> {
  const commands: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    serve(s, commands);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `mongodb://127.0.0.1:${port}/svcmail?directConnection=true`,
    commands,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
