#!/usr/bin/env node
import { load } from './load.js';

const { runAsProcess } = await load('daemons/shared/run');
const { startWorker } = await load('daemons/worker/main');
await runAsProcess('worker', startWorker);
