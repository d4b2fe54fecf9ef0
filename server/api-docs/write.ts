#!/usr/bin/env node
// Build step: the API documents the gateway serves and the README links.
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';
import { asyncApiDocument } from './asyncapi.js';
import { openApiDocument } from './openapi.js';

const dir = path.join(packageRoot(), 'dist', 'api');
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify(openApiDocument(), null, 2) + '\n');
fs.writeFileSync(path.join(dir, 'asyncapi.json'), JSON.stringify(asyncApiDocument(), null, 2) + '\n');
