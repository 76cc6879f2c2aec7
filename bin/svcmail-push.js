#!/usr/bin/env node
import { load } from './load.js';

const { runAsProcess } = await load('daemons/shared/run');
const { startPush } = await load('daemons/push/main');
await runAsProcess('push', startPush);
