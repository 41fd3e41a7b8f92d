#!/usr/bin/env node
/** CDK entry point: `npx cdk synth`, `npx cdk deploy [-c tenang:stage=dev] [-c tenang:target=emulator]`. */
import { App } from 'aws-cdk-lib';
import { DEFAULT_REGION } from 'tenang/infra';
import { referenceApp } from './reference-app';

const app = new App();
const region = process.env.CDK_DEFAULT_REGION ?? process.env.AWS_REGION ?? DEFAULT_REGION;
// Job types' `entry` paths are relative to this directory.
referenceApp(app, region, { appDir: __dirname });
app.synth();
