"""Ordered sets as AVL trees: the `Set` module that the 2020/21 notebooks import for their A* frontier.

The API is the one the notebooks describe:

    S = Set()        an empty set
    S.isEmpty()      is S empty?
    S.member(x)      is x an element of S?
    S.insert(x)      add x to S (S changes; inserting an element twice keeps one)
    S.delete(x)      remove x from S (S changes; deleting a missing element does nothing)
    S.pop()          remove and return the smallest element of S

Elements are ordered by `<` alone (x == y is taken to mean neither x < y nor y < x), so a
frontier of (estimate, state) pairs pops the pair with the smallest estimate first.
Besides, len(S), iter(S) (in ascending order), `x in S` and repr(S) work.
"""

from __future__ import annotations

from typing import Any, Iterator


class _Node:
    """A tree node; `height` is the height of the subtree rooted here (a leaf has height 1)."""

    __slots__ = ("key", "left", "right", "height")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.height = 1


def _height(node: _Node | None) -> int:
    return node.height if node is not None else 0


def _update(node: _Node) -> None:
    node.height = 1 + max(_height(node.left), _height(node.right))


def _rotate_right(node: _Node) -> _Node:
    top = node.left
    node.left, top.right = top.right, node
    _update(node)
    _update(top)
    return top


def _rotate_left(node: _Node) -> _Node:
    top = node.right
    node.right, top.left = top.left, node
    _update(node)
    _update(top)
    return top


def _rebalance(node: _Node) -> _Node:
    """Restore the AVL property at node, whose subtrees are AVL trees of heights differing by at most 2."""
    _update(node)
    balance = _height(node.left) - _height(node.right)
    if balance > 1:
        if _height(node.left.left) < _height(node.left.right):
            node.left = _rotate_left(node.left)
        return _rotate_right(node)
    if balance < -1:
        if _height(node.right.right) < _height(node.right.left):
            node.right = _rotate_right(node.right)
        return _rotate_left(node)
    return node


class Set:
    """A mutable ordered set (AVL tree) of mutually comparable elements."""

    def __init__(self) -> None:
        self._root: _Node | None = None
        self._size = 0

    def isEmpty(self) -> bool:
        return self._root is None

    def member(self, x: Any) -> bool:
        node = self._root
        while node is not None:
            if x < node.key:
                node = node.left
            elif node.key < x:
                node = node.right
            else:
                return True
        return False

    def insert(self, x: Any) -> None:
        self._root = self._insert(self._root, x)

    def delete(self, x: Any) -> None:
        self._root = self._delete(self._root, x)

    def pop(self) -> Any:
        """Remove and return the smallest element; IndexError if the set is empty."""
        if self._root is None:
            raise IndexError("pop from an empty Set")
        smallest = self._root
        while smallest.left is not None:
            smallest = smallest.left
        self._root = self._delete_min(self._root)
        self._size -= 1
        return smallest.key

    def __len__(self) -> int:
        return self._size

    def __contains__(self, x: Any) -> bool:
        return self.member(x)

    def __iter__(self) -> Iterator[Any]:
        stack: list[_Node] = []
        node = self._root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.key
            node = node.right

    def __repr__(self) -> str:
        if self._root is None:
            return "Set()"
        return "{" + ", ".join(repr(x) for x in self) + "}"

    # Recursive helpers return the new root of the subtree they changed; the depth of an
    # AVL tree is below 1.45 log2(n + 2), so recursion stays shallow.

    def _insert(self, node: _Node | None, x: Any) -> _Node:
        if node is None:
            self._size += 1
            return _Node(x)
        if x < node.key:
            node.left = self._insert(node.left, x)
        elif node.key < x:
            node.right = self._insert(node.right, x)
        else:
            return node
        return _rebalance(node)

    def _delete(self, node: _Node | None, x: Any) -> _Node | None:
        if node is None:
            return None
        if x < node.key:
            node.left = self._delete(node.left, x)
        elif node.key < x:
            node.right = self._delete(node.right, x)
        else:
            self._size -= 1
            if node.left is None:
                return node.right
            if node.right is None:
                return node.left
            successor = node.right
            while successor.left is not None:
                successor = successor.left
            node.key = successor.key
            node.right = self._delete_min(node.right)
        return _rebalance(node)

    def _delete_min(self, node: _Node) -> _Node | None:
        """The subtree without its smallest element (the caller counts the removal)."""
        if node.left is None:
            return node.right
        node.left = self._delete_min(node.left)
        return _rebalance(node)
