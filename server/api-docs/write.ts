#!/usr/bin/env node
// Build step: the API documents the gateway serves and the README links.
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../paths.js';
import { apiDocumentText } from './serve.js';
import { installedRedoc, offlineRedoc, REDOC_FILE } from './reference.js';

const dir = path.join(packageRoot(), 'dist', 'api');
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, 'openapi.json'), apiDocumentText('openapi'));
fs.writeFileSync(path.join(dir, 'asyncapi.json'), apiDocumentText('asyncapi'));
// The reference page's renderer, kept with the build so that a node serves it without node_modules.
const redoc = installedRedoc();
if (!redoc) throw new Error('redoc is not installed: npm ci installs it (a dev dependency)');
// Fails the build, rather than the page, when a new Redoc loads something remote in another way.
offlineRedoc(fs.readFileSync(redoc));
fs.copyFileSync(redoc, path.join(dir, REDOC_FILE));
