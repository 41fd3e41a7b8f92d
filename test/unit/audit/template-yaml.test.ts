/**
 * YAML as CloudFormation's own tools read it: what cfn-lint and the SAM CLI (PyYAML) load, the
 * audit loads, to the same values. The `.cfn-lint.json` next to each fixture is what cfn-lint's
 * decoder (cfnlint.decode.decode_str, cfn-lint 1.51) made of it; `cfn-lint` passes both fixtures.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { auditTemplates } from '../../../lib/audit/template-audit';
import { readTemplateText } from '../../../lib/audit/template-input';
import { TemplateFormatError, flowIndentFixed, parseTemplateText } from '../../../lib/audit/template-text';

const FIXTURES = path.join(__dirname, 'fixtures');

function fixture(name: string): string {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8');
}

describe('Function: parseTemplateText (YAML as cfn-lint and PyYAML read it)', () => {
  it('when a multi-line flow collection closes at (or left of) its key’s indentation, it reads it as cfn-lint does', () => {
    // Prepare
    const text = fixture('flow-closing-indent.yaml');
    const expected: unknown = JSON.parse(fixture('flow-closing-indent.cfn-lint.json'));

    // Act
    const { template, lineOf } = parseTemplateText(text, 'flow-closing-indent.yaml');

    // Assess
    expect(template).toEqual(expected);
    // Lines are kept: the alarm after the re-indented collections is still on its own line.
    const alarmLine = text.split('\n').indexOf('  Alarm:') + 1;
    expect(lineOf(['Resources', 'Alarm'])).toBe(alarmLine);
  });

  it('when the closing }] sits at the key’s indentation, the audit reads the event behind it', () => {
    // Act
    const { items } = auditTemplates([readTemplateText(fixture('flow-closing-indent.yaml'), 'worker.yaml')]);

    // Assess
    const d3 = items.find((i) => i.ruleId === 'Tenang-D3');
    expect(d3).toMatchObject({ status: 'pass', resources: ['Worker (event Jobs)'] });
  });

  it('when scalars are YAML 1.1 (yes, on, 0755) or look like a date, it resolves them as cfn-lint does', () => {
    // Act
    const { template } = parseTemplateText(fixture('yaml11-scalars.yaml'), 'yaml11-scalars.yaml');

    // Assess
    expect(template).toEqual(JSON.parse(fixture('yaml11-scalars.cfn-lint.json')));
  });

  it('when a key is given twice, it keeps the last value, as PyYAML (and so the SAM CLI) does', () => {
    // Prepare (cfn-lint refuses the text, E0000 "Duplicate found"; sam deploy loads it, the last value winning)
    const text =
      'Resources:\n  Jobs:\n    Type: AWS::SQS::Queue\n    Properties:\n      VisibilityTimeout: 30\n      VisibilityTimeout: 90\n';

    // Act
    const { template } = parseTemplateText(text, 'dup.yaml');

    // Assess
    expect(template).toEqual({
      Resources: { Jobs: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 90 } } },
    });
  });

  it('when a line is indented with a tab, it refuses it naming the line, as PyYAML does', () => {
    // Act
    const read = (): unknown => parseTemplateText('Resources:\n  Q:\n\tType: AWS::SQS::Queue\n', 'tab.yaml');

    // Assess
    expect(read).toThrow(TemplateFormatError);
    expect(read).toThrow(
      /tab\.yaml is not a JSON or YAML template: Tabs are not allowed as indentation \(line 3\)/,
    );
  });
});

describe('Function: flowIndentFixed', () => {
  it('when a flow collection is indented too little, it moves only its lines right, past the line that opens it', () => {
    // Prepare
    const text = [
      'A:',
      '  key: [{',
      '    "x": "a # not a comment, ] not a closer",',
      '  }]',
      '  plain: arn:aws:x[1]',
      '  b: [',
      '  1,',
      '  2',
      ']',
      '  policy: |',
      '    {',
      '    }',
    ].join('\n');

    // Act
    const fixed = flowIndentFixed(text);

    // Assess
    expect(fixed.split('\n')).toEqual([
      'A:',
      '  key: [{',
      '    "x": "a # not a comment, ] not a closer",',
      '   }]',
      '  plain: arn:aws:x[1]',
      '  b: [',
      '   1,',
      '   2',
      '   ]',
      '  policy: |',
      '    {',
      '    }',
    ]);
  });
});
