#!/usr/bin/env node
import { load } from './load.js';

const { runAsProcess } = await load('daemons/shared/run');
const { startApi } = await load('daemons/api/main');
await runAsProcess('api', startApi);
