#!/usr/bin/env node
import { load } from './load.js';

const { main } = await load('cli/main');
await main(process.argv);
