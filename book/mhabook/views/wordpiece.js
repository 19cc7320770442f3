/* BERT's uncased WordPiece tokenizer, in the browser.
 *
 * Gives the ids of the Python (Hugging Face, Rust "tokenizers") tokenizer of
 * the bundled checkpoint for a sentence or a pair:
 *   1. special tokens typed in the text ("[SEP]") are kept whole;
 *   2. normalise: drop control characters, NUL and U+FFFD, turn every
 *      white space into " ", put spaces around CJK ideographs, strip accents
 *      (NFD, then drop non-spacing marks), lower-case;
 *   3. split on white space, and split off every punctuation character;
 *   4. WordPiece: longest match first, "##" before a word's later pieces,
 *      [UNK] for a word that cannot be cut or is over 100 characters;
 *   5. [CLS] A [SEP] (B [SEP]), token_type_ids 0 for A, 1 for B.
 *
 * Usage: const wp = MhaWordPiece.fromVocab(vocabText);  // one token a line
 *        wp.encode("a sentence", "optional pair") ->
 *          {tokens, input_ids, token_type_ids}
 * A second text that is undefined or "" makes a single sentence.
 */
(function (global) {
  "use strict";

  const SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
  const MAX_WORD_CHARS = 100;
  const IS_OTHER = /\p{C}/u; // Cc, Cf, Cs, Co, Cn
  const IS_SPACE = /\p{White_Space}/u;
  const IS_MARK = /\p{Mn}/u;
  const IS_PUNCT = /\p{P}/u;

  function isCJK(code) {
    return (
      (code >= 0x4e00 && code <= 0x9fff) ||
      (code >= 0x3400 && code <= 0x4dbf) ||
      (code >= 0x20000 && code <= 0x2a6df) ||
      (code >= 0x2a700 && code <= 0x2b73f) ||
      (code >= 0x2b740 && code <= 0x2b81f) ||
      (code >= 0x2b920 && code <= 0x2ceaf) ||
      (code >= 0xf900 && code <= 0xfaff) ||
      (code >= 0x2f800 && code <= 0x2fa1f)
    );
  }

  function isPunctuation(char, code) {
    const ascii =
      (code >= 33 && code <= 47) || (code >= 58 && code <= 64) ||
      (code >= 91 && code <= 96) || (code >= 123 && code <= 126);
    return ascii || IS_PUNCT.test(char);
  }

  // Step 2, one code point at a time, as the Rust normaliser does.
  function normalise(text) {
    let cleaned = "";
    for (const char of text) {
      const code = char.codePointAt(0);
      const keep = char === "\t" || char === "\n" || char === "\r";
      if (code === 0 || code === 0xfffd || (!keep && IS_OTHER.test(char))) {
        continue;
      }
      if (IS_SPACE.test(char)) {
        cleaned += " ";
      } else if (isCJK(code)) {
        cleaned += " " + char + " ";
      } else {
        cleaned += char;
      }
    }
    let out = "";
    for (const char of cleaned.normalize("NFD")) {
      if (!IS_MARK.test(char)) {
        out += char.toLowerCase(); // per code point: no final-sigma rule
      }
    }
    return out;
  }

  // Step 3.
  function preTokenize(text) {
    const words = [];
    let word = "";
    for (const char of text) {
      const code = char.codePointAt(0);
      if (IS_SPACE.test(char)) {
        if (word) words.push(word);
        word = "";
      } else if (isPunctuation(char, code)) {
        if (word) words.push(word);
        words.push(char);
        word = "";
      } else {
        word += char;
      }
    }
    if (word) words.push(word);
    return words;
  }

  class WordPiece {
    constructor(vocab) {
      this.vocab = vocab; // Map token -> id
      this.idToToken = [];
      vocab.forEach((id, token) => { this.idToToken[id] = token; });
      for (const token of SPECIAL) {
        if (!vocab.has(token)) {
          throw new Error("the vocabulary lacks " + token);
        }
      }
    }

    // Step 4: the pieces of one word.
    wordPieces(word) {
      const chars = Array.from(word);
      if (chars.length > MAX_WORD_CHARS) {
        return ["[UNK]"];
      }
      const pieces = [];
      let start = 0;
      while (start < chars.length) {
        let end = chars.length;
        let found = null;
        while (start < end) {
          let piece = chars.slice(start, end).join("");
          if (start > 0) piece = "##" + piece;
          if (this.vocab.has(piece)) {
            found = piece;
            break;
          }
          end -= 1;
        }
        if (found === null) {
          return ["[UNK]"];
        }
        pieces.push(found);
        start = end;
      }
      return pieces;
    }

    // Steps 1 to 4 for one text.
    tokenize(text) {
      const tokens = [];
      const parts = String(text).split(/(\[PAD\]|\[UNK\]|\[CLS\]|\[SEP\]|\[MASK\])/);
      parts.forEach((part, i) => {
        if (i % 2 === 1) {
          tokens.push(part); // a special token, typed as such
          return;
        }
        for (const word of preTokenize(normalise(part))) {
          tokens.push(...this.wordPieces(word));
        }
      });
      return tokens;
    }

    // Step 5.
    encode(textA, textB) {
      const tokens = ["[CLS]", ...this.tokenize(textA), "[SEP]"];
      const types = tokens.map(() => 0);
      if (typeof textB === "string" && textB !== "") {
        const b = [...this.tokenize(textB), "[SEP]"];
        tokens.push(...b);
        types.push(...b.map(() => 1));
      }
      return {
        tokens: tokens,
        input_ids: tokens.map((t) => this.vocab.get(t)),
        token_type_ids: types,
      };
    }
  }

  function fromVocab(text) {
    const vocab = new Map();
    text.split("\n").forEach((line, id) => {
      const token = line.replace(/\r$/, "");
      if (token !== "" && !vocab.has(token)) {
        vocab.set(token, id);
      }
    });
    return new WordPiece(vocab);
  }

  global.MhaWordPiece = { fromVocab: fromVocab, normalise: normalise };
})(typeof window !== "undefined" ? window : globalThis);
