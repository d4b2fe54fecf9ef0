#!/usr/bin/env node
// Build step: the API documents the gateway serves and the README links.
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';
import { apiDocumentText } from './documents.js';

const dir = path.join(packageRoot(), 'dist', 'api');
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, 'openapi.json'), apiDocumentText('openapi'));
fs.writeFileSync(path.join(dir, 'asyncapi.json'), apiDocumentText('asyncapi'));
