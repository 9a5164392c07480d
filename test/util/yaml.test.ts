/**
 * Documents mean what they mean to Kubernetes. Every expected value in these tables is what
 * sigs.k8s.io/yaml v1.6.0 (YAMLToJSON, the reader of kubectl and the API server) gives for the
 * same text.
 */
import { parseConfigDocuments } from '../../src/config/parse.js';
import { readYamlDocuments, yamlValue } from '../../src/util/yaml.js';

function read(text: string): unknown {
  const [doc] = readYamlDocuments(text);
  expect(doc.errors.map((e) => e.message)).toEqual([]);
  return yamlValue(doc);
}

describe('YAML as Kubernetes reads it', () => {
  it.each<[string, unknown]>([
    ['.', '.'],
    ['yes', true],
    ['on', true],
    ['y', true],
    ['Y', true],
    ['n', false],
    ['NO', false],
    ['Off', false],
    ['True', true],
    ['~', null],
    ['0777', 511],
    ['0o17', 15],
    ['0O17', 15],
    ['0x1f', 31],
    ['0X1F', 31],
    ['0b101', 5],
    ['-0b11', -3],
    ['1_000', 1000],
    ['-0x_1f', -31],
    ['00017', 15],
    ['-017', -15],
    ['08', 8],
    ['1e3', 1000],
    ['1.5e+3', 1500],
    ['1.', 1],
    ['.5', 0.5],
    ['-.5', -0.5],
    ['+12', 12],
    ['12:30:00', '12:30:00'],
    ['1:20', '1:20'],
    ['2001-01-01', '2001-01-01'],
    ['2001-01-01T10:00:00Z', '2001-01-01T10:00:00Z'],
    ['0x1p-2', '0x1p-2'],
    ['0.1e', '0.1e'],
    ['1e400', '1e400'],
    ['+inf', '+inf'],
    ['infinity', 'infinity'],
    ['.Nan', '.Nan'],
    ['_1', '_1'],
    ['0x', '0x'],
    ['2001:db8::1', '2001:db8::1'],
  ])('plain %j reads as %j', (text, expected) => {
    expect(read(`a: ${text}\n`)).toEqual({ a: expected });
    // quoted, it is always the string
    expect(read(`a: "${text}"\n`)).toEqual({ a: text });
  });

  it('keeps IPv6 addresses that end in "::" inside flow lists as strings', () => {
    expect(read('a: [2001:db8::, fe80::1]\n')).toEqual({ a: ['2001:db8::', 'fe80::1'] });
    expect(read('a: [foo, fe80::]\n')).toEqual({ a: ['foo', 'fe80::'] });
    // a real pair in a flow list stays a pair, and a block item ending in ": " is a mapping there too
    expect(read('a: [x: 1]\n')).toEqual({ a: [{ x: 1 }] });
    expect(read('a:\n- 2001:db8::\n')).toEqual({ a: [{ '2001:db8:': null }] });
  });

  it('resolves keys the same way and makes them strings', () => {
    expect(read('g: {a: 1, 1: 2, yes: 3, 1.5: x}\n')).toEqual({ g: { a: 1, '1': 2, true: 3, '1.5': 'x' } });
  });

  it('refuses .inf and .nan, which JSON cannot hold', () => {
    const [doc] = readYamlDocuments('a: .inf\n');
    expect(doc.errors.map((e) => e.message).join()).toContain('not a number JSON can hold');
  });

  it('accepts exportTo [foo, .] and an IPv6 ServiceEntry address in a config document', () => {
    const text = `apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: ext}
spec:
  hosts: [api.example.com]
  addresses: [2001:db8::]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: NONE
  exportTo: [foo, .]
`;
    const { objects, rejections } = parseConfigDocuments(text, 'se.yaml', 'default');
    expect(rejections).toEqual([]);
    expect(objects[0].spec).toMatchObject({ addresses: ['2001:db8::'], exportTo: ['foo', '.'] });
  });
});
