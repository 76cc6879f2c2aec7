#!/usr/bin/env node
import { load } from './load.js';

const { runAsProcess } = await load('daemons/shared/run');
const { startProtocols } = await load('daemons/protocols/main');
await runAsProcess('protocols', startProtocols);
