"""The sequence tutorials' models, trained a few SGD steps on fixed weights: the losses PyTorch prints.

A char-RNN name classifier (nn.RNN, nn.Linear, nn.LogSoftmax, nn.NLLLoss, gradient
clipping) as "Classifying Names with a Character-Level RNN" writes it, and an
LSTM part-of-speech tagger (nn.Embedding, nn.LSTM, F.log_softmax) as "Sequence
Models and Long Short-Term Memory Networks" does, in float32.
"""

import string

import numpy as np

import torch

nn = torch.nn
F = nn.functional

allowed_characters = string.ascii_letters + " .,;'"
n_letters = len(allowed_characters)


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][allowed_characters.find(letter)] = 1
    return tensor


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        output = self.softmax(output)
        return output


def fixed_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)), dtype=torch.float32))


languages = ["English", "French", "Italian"]
names = [("Smith", 0), ("Dubois", 1), ("Rossi", 2), ("Taylor", 0), ("Lefevre", 1), ("Bianchi", 2), ("Brown", 0),
         ("Moreau", 1), ("Ricci", 2), ("O'Neil", 0)]
rnn = CharRNN(n_letters, 16, len(languages))
fixed_weights(rnn, 0)
print(rnn)
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.2)
rnn.train()
for step in range(6):
    batch = names[step % 2::2]
    batch_loss = 0
    for name, label in batch:
        output = rnn.forward(lineToTensor(name))
        batch_loss += criterion(output, torch.tensor([label], dtype=torch.long))
    batch_loss.backward()
    norm = nn.utils.clip_grad_norm_(rnn.parameters(), 3)
    optimizer.step()
    optimizer.zero_grad()
    print(step, f"{batch_loss.item() / len(batch):.4f}", f"{norm.item():.4f}")
rnn.eval()
with torch.no_grad():
    for name, label in names[:4]:
        output = rnn(lineToTensor(name))
        print(name, languages[output.argmax(1).item()], np.round(output.exp().numpy().astype(np.float64), 3).tolist())


class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()
        self.hidden_dim = hidden_dim
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space, dim=1)
        return tag_scores


def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    return torch.tensor(idxs, dtype=torch.long)


training_data = [
    ("The dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("Everybody read that book".split(), ["NN", "V", "DET", "NN"]),
]
word_to_ix = {}
for sent, tags in training_data:
    for word in sent:
        if word not in word_to_ix:
            word_to_ix[word] = len(word_to_ix)
tag_to_ix = {"DET": 0, "NN": 1, "V": 2}
model = LSTMTagger(6, 6, len(word_to_ix), len(tag_to_ix))
fixed_weights(model, 1)
print(model)
loss_function = nn.NLLLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    total = 0.0
    for sentence, tags in training_data:
        model.zero_grad()
        sentence_in = prepare_sequence(sentence, word_to_ix)
        targets = prepare_sequence(tags, tag_to_ix)
        tag_scores = model(sentence_in)
        loss = loss_function(tag_scores, targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(epoch, f"{total:.4f}")
with torch.no_grad():
    tag_scores = model(prepare_sequence(training_data[0][0], word_to_ix))
    print(np.round(tag_scores.numpy().astype(np.float64), 3).tolist())

lstm = nn.LSTM(3, 3)
fixed_weights(lstm, 2)
inputs = [torch.tensor(np.random.default_rng(3).normal(size=(1, 3)), dtype=torch.float32) for _ in range(5)]
hidden = (torch.zeros(1, 1, 3), torch.zeros(1, 1, 3))
for i in inputs:
    out, hidden = lstm(i.view(1, 1, -1), hidden)
print(out.grad_fn.name(), np.round(out.detach().numpy().astype(np.float64), 4).tolist())
