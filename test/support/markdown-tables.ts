/**
 * Tables of Markdown documents that GitHub would not render as written (checked by
 * test/unit/docs/tables.test.ts). A GFM table is a header row, a delimiter row
 * (`|---|---|`) with as many cells, then data rows; it runs until a line that is not a
 * row. So a header row written directly under another table's last row (no blank line
 * between) is taken as a data row of that table, its delimiter row as another, and a
 * delimiter row with a different cell count makes no table at all. Pure; fenced code
 * blocks are skipped.
 */

export interface TableProblem {
  /** 1-based line of the delimiter row. */
  line: number;
  problem: string;
}

const DELIMITER_CELL = /^\s*:?-+:?\s*$/;

/** The cells of a row: split at pipes that are not escaped, without the outer pipes. */
function cells(row: string): string[] {
  let text = row.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/);
}

function isRow(line: string | undefined): boolean {
  return line !== undefined && line.trim().startsWith('|');
}

function isDelimiterRow(line: string): boolean {
  return line.includes('|') && line.includes('-') && cells(line).every((cell) => DELIMITER_CELL.test(cell));
}

export function tableProblems(markdown: string): TableProblem[] {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  const inCode = lines.map((line) => {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (opening !== undefined && opening[0] === fence[0] && opening.length >= fence.length && line.trim() === opening) fence = undefined;
      return true;
    }
    if (opening !== undefined) {
      fence = opening;
      return true;
    }
    return false;
  });
  const problems: TableProblem[] = [];
  lines.forEach((line, i) => {
    if (inCode[i] || !isDelimiterRow(line) || i === 0) return;
    const header = lines[i - 1]!;
    if (header.trim() === '' || inCode[i - 1]) return;
    if (i >= 2 && !inCode[i - 2] && isRow(lines[i - 2])) {
      problems.push({
        line: i + 1,
        problem: `the table header on line ${i} sits directly under a row of the table above, so it renders as a data row of that table: put a blank line between the tables, or make them one`,
      });
      return;
    }
    const [headerCells, delimiterCells] = [cells(header).length, cells(line).length];
    if (headerCells !== delimiterCells) {
      problems.push({ line: i + 1, problem: `the header row has ${headerCells} cells and the delimiter row ${delimiterCells}, so it renders as text, not as a table` });
    }
  });
  return problems;
}
